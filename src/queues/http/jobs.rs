//! Adding and removing jobs: `POST /v1/queues/{queue}/jobs` (enqueue, with `Idempotency-Key`)
//! and `DELETE /v1/queues/{queue}/jobs/{id}` (cancel).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::DateTime;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{logic, made_id, Cancelled, Enqueued, Idempotency, NewJob, QueueStore};
use super::present;
use super::QueuesState;
use crate::clients::{IdempotencyKey, Namespace};
use crate::clock::Clock;
use crate::error::responses::{Backend, BackendJson, NotFound};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{once_reply, ApiJson, ApiPath, NoQuery};
use crate::state::AppState;
use crate::types::rfc3339;
use crate::types::{name_rule, sha256_hex, Name};

/// Enqueue and cancel.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(enqueue))
        .routes(routes!(cancel))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
// A whole example: composed from its fields, Swagger UI's default body would hold both
// `delay_ms` and `run_at` (400).
#[schema(example = json!({"payload": {"to": "a@example.com"}, "delay_ms": 5000, "id": "mail-42", "max_attempts": 10}))]
struct EnqueueBody {
    /// Any JSON value, at most 65536 bytes serialized.
    // Kept as the bytes sent (checked to be JSON, not parsed into a tree and printed again):
    // printing again could store more than was sent and priced (`1e15` is printed
    // `1000000000000000.0`), and it is what a worker gets back.
    #[schema(required = true, value_type = Option<serde_json::Value>, example = json!({"to": "a@example.com"}))]
    #[serde(default, deserialize_with = "present")]
    payload: Option<Box<RawValue>>,
    /// Due this many ms after the store's now, 0..=31536000000 (default 0). Not with `run_at`.
    #[schema(minimum = 0, maximum = 31_536_000_000_u64, default = 0, example = 5000)]
    delay_ms: Option<u64>,
    /// Due at this instant (RFC 3339; past means now, at most a year ahead). Not with
    /// `delay_ms`.
    #[schema(value_type = Option<String>, format = DateTime)]
    run_at: Option<String>,
    /// The job's id (a name, 1-128 of [A-Za-z0-9._:@-]); generated when omitted. Enqueueing
    /// an id that exists changes nothing and answers 200 with that job.
    #[schema(value_type = Option<String>, example = "mail-42")]
    id: Option<Name>,
    /// Claims before the job goes to the dead list, 1..=1000 (default 10).
    #[schema(minimum = 1, maximum = 1_000, default = 10, example = 10)]
    max_attempts: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
struct JobRef {
    id: String,
    queue: String,
    /// When the job is (or was) due, by the store's clock.
    #[schema(value_type = String, format = DateTime)]
    run_at: String,
}

/// Enqueue a job.
///
/// `201` for a new job; `200` with the existing job when `id` exists (waiting, in flight or
/// dead), changing nothing. A queue holding `GATEWAY_QUEUE_MAX_JOBS` live jobs (waiting or in
/// flight) refuses new ones with 409 `queue_full`. Without `id`, an `Idempotency-Key` makes a
/// retry safe: the same key and body within 24 h get the first reply again (with
/// `Idempotency-Replayed: true`) and enqueue nothing. Costs the global limiter
/// 3 + body bytes / 1024 (its `x-ratelimit-cost`).
#[utoipa::path(
    post, path = "/v1/queues/{queue}/jobs", operation_id = "queuesEnqueue",
    params(
        ("queue" = String, Path, description = name_rule!(), example = "mail"),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h"),
    ),
    request_body = EnqueueBody,
    responses(
        (status = 201, body = JobRef, description = "Enqueued"),
        (status = 200, body = JobRef, description = "A job with this id exists; nothing changed"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`queue_full`: the queue holds GATEWAY_QUEUE_MAX_JOBS live jobs"),
        BackendJson,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another request"),
    )
)]
async fn enqueue(
    State(state): State<QueuesState>,
    namespace: Namespace,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(queue): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<EnqueueBody>,
) -> Result<Response, ApiError> {
    let (job, idem) = new_job(body, key, &state.clock)?;
    let max_jobs = state.settings.max_jobs;
    let once = state
        .store
        .queue_enqueue(&namespace.scope(&queue), &job, max_jobs, idem.as_ref())
        .await?;
    once_reply(once, |outcome| enqueued(&queue, max_jobs, outcome))
}

/// The job `body` asks for, checked, and its idempotency record under `key`.
fn new_job(
    body: EnqueueBody,
    key: Option<String>,
    clock: &Clock,
) -> Result<(NewJob, Option<Idempotency>), ApiError> {
    let payload = body
        .payload
        .as_ref()
        .ok_or_else(|| ApiError::invalid("payload is required (any JSON value)"))?;
    let payload = logic::payload(payload.get())?;
    let run_at = body
        .run_at
        .as_deref()
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.timestamp_millis())
                .map_err(|_| {
                    ApiError::invalid(format!("run_at must be an RFC 3339 instant, got {s:?}"))
                })
        })
        .transpose()?;
    let due = logic::due(body.delay_ms, run_at, clock.now_ms())?;
    let max_attempts = logic::max_attempts(body.max_attempts)?;
    let idem = key.map(|key| Idempotency {
        key,
        // The whole request as asked (the payload by digest: the record stays small).
        fingerprint: sha256_hex(
            format!(
                "enqueue|{:?}|{:?}|{:?}|{max_attempts}|{payload}",
                body.id, body.delay_ms, run_at
            )
            .as_bytes(),
        ),
    });
    // Only here is an id marked as made: the body has no field for it.
    let (id, id_made) = match body.id {
        Some(id) => (id, false),
        None => (made_id(), true),
    };
    let job = NewJob {
        id,
        id_made,
        payload,
        due,
        max_attempts,
    };
    Ok((job, idem))
}

/// The reply to an enqueue to `queue`, whose cap is `max_jobs`.
fn enqueued(queue: &Name, max_jobs: u64, outcome: Enqueued) -> Response {
    match outcome {
        Enqueued::Created { id, run_at } => (
            StatusCode::CREATED,
            Json(JobRef {
                id: id.to_string(),
                queue: queue.to_string(),
                run_at: rfc3339(run_at),
            }),
        )
            .into_response(),
        Enqueued::Existing { id, run_at } => Json(JobRef {
            id: id.to_string(),
            queue: queue.to_string(),
            run_at: rfc3339(run_at),
        })
        .into_response(),
        Enqueued::Full => ApiError::Conflict {
            code: "queue_full",
            detail: format!("queue {queue} holds {max_jobs} jobs (GATEWAY_QUEUE_MAX_JOBS)"),
            extra: None,
        }
        .into_response(),
    }
}

/// Cancel a job that is not in flight (waiting, delayed, lapsed or dead).
#[utoipa::path(
    delete, path = "/v1/queues/{queue}/jobs/{id}", operation_id = "queuesCancel",
    params(
        ("queue" = String, Path, description = name_rule!(), example = "mail"),
        ("id" = String, Path, description = name_rule!(), example = "mail-42"),
    ),
    responses(
        (status = 204, description = "Cancelled"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`conflict`: the job is claimed and its visibility has not ended"),
        Backend, NotFound,
    )
)]
async fn cancel(
    State(state): State<QueuesState>,
    namespace: Namespace,
    ApiPath((queue, id)): ApiPath<(Name, Name)>,
    _: NoQuery,
) -> ApiResult<StatusCode> {
    match state
        .store
        .queue_cancel(&namespace.scope(&queue), &id)
        .await?
    {
        Cancelled::Done => Ok(StatusCode::NO_CONTENT),
        Cancelled::NotFound => Err(ApiError::NotFound(format!("no job {id} in queue {queue}"))),
        Cancelled::InFlight => Err(ApiError::Conflict {
            code: "conflict",
            detail: format!("job {id} is in flight; ack it or wait for its visibility to end"),
            extra: None,
        }),
    }
}
