//! Looking at a queue: `GET /v1/queues/{queue}` (its counts) and
//! `GET /v1/queues/{queue}/dead` (its dead jobs, paged).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{DeadJob, QueueStore};
use super::json;
use super::QueuesState;
use crate::clients::ScopedName;
use crate::error::responses::Backend;
use crate::error::ApiResult;
use crate::extract::{ApiQuery, NoQuery};
use crate::paging::Page;
use crate::state::AppState;
use crate::types::name_rule;
use crate::types::rfc3339;

/// Stats and dead jobs.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(stats))
        .routes(routes!(dead))
}

#[derive(Debug, Serialize, ToSchema)]
struct StatsView {
    queue: String,
    /// Waiting, not yet due.
    delayed: u64,
    /// Due, including claims whose visibility lapsed.
    ready: u64,
    /// Claimed and within their visibility.
    in_flight: u64,
    /// On the dead list (the newest 1000 are kept).
    dead: u64,
}

/// A queue's counts by the store's clock (all zero for a queue never used).
#[utoipa::path(
    get, path = "/v1/queues/{queue}", operation_id = "queuesStats",
    params(("queue" = String, Path, description = name_rule!(), example = "mail")),
    responses((status = 200, body = StatsView), Backend)
)]
async fn stats(
    State(state): State<QueuesState>,
    queue: ScopedName,
    _: NoQuery,
) -> ApiResult<Json<StatsView>> {
    let s = state.store.queue_stats(&queue.scoped).await?;
    Ok(Json(StatsView {
        queue: queue.name.to_string(),
        delayed: s.delayed,
        ready: s.ready,
        in_flight: s.in_flight,
        dead: s.dead,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct DeadQuery {
    /// The `next` of the previous page; absent or empty means from the oldest.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100); a page also ends once its payloads pass 1 MiB.
    limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
struct DeadView {
    id: String,
    #[schema(value_type = Value)]
    payload: Box<RawValue>,
    #[schema(value_type = String, format = DateTime)]
    run_at: String,
    /// Claims it had (its `max_attempts`).
    attempts: u32,
}

#[derive(Debug, Serialize, ToSchema)]
struct DeadPage {
    /// Oldest death first.
    jobs: Vec<DeadView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page.
    next: Option<String>,
}

/// Jobs that used up `max_attempts`, paged.
///
/// The newest 1000 dead jobs of a queue are kept. Cancel one to drop it; enqueue its id
/// again after that to retry it.
#[utoipa::path(
    get, path = "/v1/queues/{queue}/dead", operation_id = "queuesDead",
    params(("queue" = String, Path, description = name_rule!(), example = "mail"), DeadQuery),
    responses((status = 200, body = DeadPage), Backend)
)]
async fn dead(
    State(state): State<QueuesState>,
    queue: ScopedName,
    ApiQuery(q): ApiQuery<DeadQuery>,
) -> ApiResult<Json<DeadPage>> {
    let page = Page::<u64>::parse(q.after.as_deref(), q.limit)?;
    let mut jobs: Vec<DeadJob> = state
        .store
        .queue_dead(&queue.scoped, page.after, page.fetch())
        .await?;
    // A page the store ended at its byte budget may have a next page too (at worst empty).
    let bytes: u64 = jobs.iter().map(|j| j.payload.len() as u64).sum();
    let next = page.next(&mut jobs, bytes >= super::super::CLAIM_BYTES, |j| j.seq);
    Ok(Json(DeadPage {
        jobs: jobs
            .into_iter()
            .map(|j| DeadView {
                id: j.id.to_string(),
                payload: json(j.payload),
                run_at: rfc3339(j.run_at),
                attempts: j.attempts,
            })
            .collect(),
        next,
    }))
}
