//! Delayed-queue routes (docs/api.md "Delayed queues").

//!
//! Here: the router, the routes' costs and what they share; `jobs.rs`: enqueue and cancel;
//! `claims.rs`: claim (with its long poll) and ack; `stats.rs`: counts and dead jobs;
//! `events.rs`: its ready jobs, live.

mod claims;
mod events;
mod jobs;
mod stats;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use utoipa_axum::router::OpenApiRouter;

use super::logic;
use crate::clock::Clock;
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;

/// What the delayed-queue routes are handed (`State<QueuesState>`), made once at start-up.
pub type QueuesState = Slice<Queues>;

/// The delayed-queue routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Queues {
    store: Store,
    settings: super::Settings,
    clock: Clock,
    /// The event streams of this process and the queues' feeds behind them.
    streams: std::sync::Arc<crate::streams::Streams>,
    feeds: events::QueueFeeds,
}

impl From<&Shared> for Queues {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::queues::Settings>().clone(),
            clock: shared.settings.clock.clone(),
            streams: shared
                .part::<std::sync::Arc<crate::streams::Streams>>()
                .clone(),
            feeds: std::sync::Arc::new(crate::streams::Feeds::new(
                events::Watch {
                    store: shared.store.clone(),
                    clock: shared.settings.clock.clone(),
                },
                shared.settings.clock.clone(),
            )),
        }
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> = Some((
        "queues",
        "Delayed queues: due-time sorted sets, atomic claims with visibility timeouts",
    ));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        jobs::routes()
            .merge(claims::routes())
            .merge(stats::routes())
            .merge(events::router())
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<QueuesState>()
    }
}

/// What these routes declare to the shared layers (docs/ratelimit.md "Route costs").
pub const TERMS: &[RouteTerms] = &[
    // A job's payload is up to 64 KiB and is stored as sent: ~1 KiB per unit keeps the
    // abuse budget. Its id is stored three times (due set, meta and payload hashes), and one
    // longer than 64 bytes turns all three from listpacks into hash tables and a skip list:
    // a small job with a 128-character id on a new queue stores ~2.5 KB, ~3.4 KB with a
    // 1,023-byte body, hence the base of 3 (docs/performance.md "Abuse budget"). The largest job
    // (67 units, 68 with an Idempotency-Key) still fits the default burst.
    RouteTerms::new(
        "POST",
        "/v1/queues/{queue}/jobs",
        Rule::PerBody {
            base: 3,
            divisor: 1024,
            cap: Cap::Uncapped,
        },
        "3 + body bytes / 1024 (a body costing more than the caller's burst is refused with 413)",
    ),
    // Up to 100 jobs moved and up to 1 MiB of payloads read in one script: 2. A long poll
    // also holds one of the queue's waiting places (and a connection) for its `wait_ms` and
    // looks once more at its end: one unit more per second it may wait, 22 at the longest
    // wait, within the default burst. Its request timeout is extended by the longest wait.
    RouteTerms::new(
        "POST",
        "/v1/queues/{queue}/claim",
        Rule::Body(claim_cost, Cap::Capped),
        "2 + wait_ms / 1000 (a long poll pays for the time it may wait: 22 at the longest)",
    )
    .waiting(std::time::Duration::from_millis(logic::MAX_WAIT_MS)),
    RouteTerms::new(
        "GET",
        "/v1/queues/{queue}/dead",
        Rule::Query(dead_cost),
        "1 + limit / 100",
    ),
];

/// An empty body takes the defaults (no wait); a body the handler will refuse costs 2 (the
/// handler says what is wrong with it).
fn claim_cost(body: &[u8]) -> u64 {
    #[derive(Deserialize)]
    struct Claim {
        wait_ms: Option<u64>,
    }
    let wait_ms = Some(body)
        .filter(|b| !b.is_empty())
        .and_then(|b| serde_json::from_slice::<Claim>(b).ok())
        .and_then(|c| c.wait_ms)
        .filter(|w| *w <= logic::MAX_WAIT_MS)
        .unwrap_or(0);
    2 + wait_ms / 1000
}

/// Paged listings of large items: `1 + limit / 100` (`limit` defaults to 100).
fn dead_cost(q: &Query<'_>) -> u64 {
    1 + q.number("limit", 100) / 100
}

/// A field that must be present but may be JSON `null`, kept as the text it was sent as.
pub(super) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// A stored payload, written into a reply as the text it is stored as: checked to be JSON but
/// not built into a tree and printed again (a claim or a dead-list page may carry 1 MiB of
/// them). Text that is not JSON (a value not written by a gateway) reads as `null`, as before.
pub(super) fn json(payload: String) -> Box<RawValue> {
    RawValue::from_string(payload)
        .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON"))
}
