//! A queue's ready jobs, live (docs/api.md "Events"): `GET /v1/queues/{queue}/events`, in the
//! caller's namespace as every queue route.
//!
//! A queue's feed (`crate::streams::feed`) hears each run that may change its ready jobs (an
//! enqueue, a claim, a cancel) and reads its counts again at most every [`EVERY`]; it reads
//! them at once when a delayed job falls due or a claim lapses, by its own timer.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use futures::future::BoxFuture;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::QueuesState;
use crate::clients::{Caller, ScopedName};
use crate::clock::Clock;
use crate::error::responses::Backend;
use crate::error::{ApiError, ApiResult};
use crate::extract::NoQuery;
use crate::queues::{Listening, QueueStore};
use crate::state::AppState;
use crate::store::{Store, StoreError};
use crate::streams::{Frames, Source};
use crate::types::{name_rule, Name};

/// At most one ready event per queue this often.
pub const EVERY: Duration = Duration::from_millis(100);

/// The events' payloads, in the document's schemas (a stream's body has no schema of its own
/// in OpenAPI 3.1: its description names them).
#[derive(OpenApi)]
#[openapi(components(schemas(ReadyEvent<'_>)))]
struct EventSchemas;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(EventSchemas::openapi()).routes(routes!(queue_events))
}

/// `event: ready`: jobs due now, to be claimed with the claim route.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ReadyEvent<'a> {
    queue: &'a str,
    /// Jobs due now (including claims whose visibility lapsed).
    ready: u64,
}

/// Stream a queue's ready jobs (server-sent events).
///
/// `text/event-stream`: `event: ready` `{queue, ready}` with the number of jobs due now, first
/// at once, then whenever it changes (an enqueue, a claim, a job falling due, a claim lapsing),
/// at most every 100 ms; a browser worker then claims with `POST /v1/queues/{queue}/claim`.
/// In the caller's namespace, as every queue route. Ids, reconnects, heartbeat, end and
/// limits as every event stream (docs/api.md "Events").
#[utoipa::path(
    get, path = "/v1/queues/{queue}/events", operation_id = "queuesEvents",
    params(("queue" = String, Path, description = name_rule!(), example = "mail")),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
         description = "The stream: `event: ready` (ReadyEvent)"),
        Backend,
    )
)]
async fn queue_events(
    State(state): State<QueuesState>,
    queue: ScopedName,
    _: NoQuery,
    caller: Option<Extension<Caller>>,
) -> ApiResult<Response> {
    let identity = caller
        .as_ref()
        .map_or("ip:unknown", |c| c.identity.as_str());
    let key = Watched {
        scoped: queue.scoped,
        name: queue.name,
    };
    let stream = state.streams.open(identity, &state.feeds, &key).await?;
    // A queue is never unknown (one never used counts zeros): its read always answers.
    stream.ok_or_else(|| ApiError::Internal("a queue's read answered unknown".to_owned()))
}

/// A watched queue: its name in the store (the caller's namespace) and as the caller gave it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Watched {
    scoped: Name,
    name: Name,
}

/// A queue's ready jobs, and when that changes by time alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    ready: u64,
    /// When (ms) a delayed job falls due or a claim lapses, the soonest.
    next_at: Option<i64>,
}

/// Queues as the feeds see them.
#[derive(Debug)]
pub struct Watch {
    pub(super) store: Store,
    pub(super) clock: Clock,
}

/// Every queue feed of this process.
pub type QueueFeeds = Arc<crate::streams::Feeds<Watch>>;

impl Source for Watch {
    type Key = Watched;
    type State = Ready;

    const KIND: &'static str = "queue";
    const EVERY: Duration = EVERY;

    fn listen<'a>(&'a self, q: &'a Watched) -> BoxFuture<'a, Result<Listening, StoreError>> {
        Box::pin(self.store.queue_listen(&q.scoped))
    }

    fn read<'a>(&'a self, q: &'a Watched) -> BoxFuture<'a, Result<Option<Ready>, StoreError>> {
        Box::pin(async move {
            let stats = self.store.queue_stats(&q.scoped).await?;
            let now = self.clock.now_ms();
            Ok(Some(Ready {
                ready: stats.ready,
                // +1 ms: a job due at `now + next` is claimable from that ms on.
                next_at: stats
                    .next_in_ms
                    .map(|ms| now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)) + 1),
            }))
        })
    }

    fn due(&self, r: &Ready, _now_ms: i64) -> Option<i64> {
        r.next_at
    }

    fn events(&self, q: &Watched, before: Option<&Ready>, now: &Ready, out: &mut Frames<'_>) {
        if before.is_some_and(|b| b.ready == now.ready) {
            return;
        }
        let body = ReadyEvent {
            queue: q.name.as_str(),
            ready: now.ready,
        };
        out.push("ready", &body);
    }
}
