//! Unique-visitor routes (docs/api.md "Unique visitors").
//!
//! Here: the router, the routes' costs and the reserved page; `record.rs`: recording visits;
//! `counts.rs`: reading a page's counts and unions of pages; `merge.rs`: folding pages;
//! `events.rs`: a page's live counts.

mod counts;
mod events;
mod merge;
mod record;

use axum::routing::get;
use utoipa_axum::router::OpenApiRouter;

use super::RESERVED_PAGE;
use crate::clock::Clock;
use crate::error::ApiError;
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::Day;

/// What the unique-visitor routes are handed (`State<UvState>`), made once at start-up.
pub type UvState = Slice<Uv>;

/// The unique-visitor routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Uv {
    store: Store,
    settings: super::Settings,
    clock: Clock,
    tz: chrono_tz::Tz,
    max_batch: usize,
    max_item_bytes: usize,
    /// The event streams of this process and the pages' feeds behind them.
    streams: std::sync::Arc<crate::streams::Streams>,
    feeds: events::PageFeeds,
}

impl From<&Shared> for Uv {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::uv::Settings>().clone(),
            clock: shared.settings.clock.clone(),
            tz: shared.settings.tz,
            max_batch: shared.settings.max_batch,
            max_item_bytes: shared.settings.max_item_bytes,
            streams: shared
                .part::<std::sync::Arc<crate::streams::Streams>>()
                .clone(),
            feeds: std::sync::Arc::new(crate::streams::Feeds::new(
                events::Pages {
                    store: shared.store.clone(),
                    clock: shared.settings.clock.clone(),
                    tz: shared.settings.tz,
                },
                shared.settings.clock.clone(),
            )),
        }
    }
}

impl Uv {
    /// Today in the configured time zone.
    fn today(&self) -> Day {
        crate::calendar::today(&self.clock, self.tz)
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> =
        Some(("uv", "Unique visitors on HyperLogLog"));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        record::routes()
            .merge(counts::routes())
            .merge(merge::routes())
            .merge(events::router())
            // `GET /v1/uv/merge` would read the reserved page: say so instead of a bare 405.
            .route("/v1/uv/merge", get(reserved_page))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<UvState>()
    }
}

/// What these routes cost the global limiter beyond 1 (docs/ratelimit.md "Route costs").
pub const TERMS: &[RouteTerms] = &[
    RouteTerms::new(
        "POST",
        "/v1/uv/{page}",
        Rule::PerBody {
            base: 1,
            divisor: 384,
            cap: Cap::Capped,
        },
        "1 + body bytes / 384",
    ),
    RouteTerms::new(
        "GET",
        "/v1/uv/{page}",
        Rule::Query(range_cost),
        "1, or 1 + days / 31 for a from..to range",
    ),
    RouteTerms::new(
        "GET",
        "/v1/uv",
        Rule::Query(union_cost),
        "1 + pages × days / 366",
    ),
    // A day can write one dense HyperLogLog into `into`: 12 KiB, ~15 KiB with the allocator's
    // rounding and the key.
    RouteTerms::new(
        "POST",
        "/v1/uv/merge",
        Rule::Body(merge_cost, Cap::Uncapped),
        "1 + 12 × days from..to (more than the caller's burst is refused with 413: merge fewer days per request)",
    ),
];

fn range_cost(q: &Query<'_>) -> u64 {
    if q.get("from").is_some() || q.get("to").is_some() {
        1 + q.days() / 31
    } else {
        1
    }
}

fn union_cost(q: &Query<'_>) -> u64 {
    let pages = q.get("pages").map_or(1, |p| {
        1 + p.matches(',').count() as u64
            + p.matches("%2C").count() as u64
            + p.matches("%2c").count() as u64
    });
    1 + pages * q.days() / 366
}

fn merge_cost(body: &[u8]) -> u64 {
    #[derive(serde::Deserialize)]
    struct Range {
        from: Option<chrono::NaiveDate>,
        to: Option<chrono::NaiveDate>,
    }
    let days = serde_json::from_slice::<Range>(body)
        .ok()
        .and_then(|r| Some((r.to? - r.from?).num_days() + 1))
        .filter(|d| (1..=366).contains(d))
        .unwrap_or(0) as u64;
    1 + 12 * days
}

async fn reserved_page() -> ApiError {
    ApiError::invalid(format!("page name {RESERVED_PAGE:?} is reserved"))
}
