//! Working jobs: `POST /v1/queues/{queue}/claim` (with an optional long poll) and
//! `POST /v1/queues/{queue}/ack`.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{claim_waiting, logic, Acked, Idempotency, Once, QueueStore};
use super::json;
use super::QueuesState;
use crate::clients::{IdempotencyKey, Namespace, ScopedName};
use crate::error::responses::BackendJson;
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{once_reply, ApiJson, ApiPath, NoQuery, OptionalJson};
use crate::state::AppState;
use crate::types::rfc3339;
use crate::types::{name_rule, sha256_hex, Name};

/// Claim and ack.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(claim))
        .routes(routes!(ack))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    /// Most jobs to claim, 1..=100 (default 1). Fewer come back once their payloads pass
    /// 1 MiB.
    #[schema(minimum = 1, maximum = 100, default = 1, example = 10)]
    max: Option<u32>,
    /// How long the claim holds the jobs before they are due again, 1000..=43200000 ms
    /// (default 30000).
    #[schema(
        minimum = 1_000,
        maximum = 43_200_000,
        default = 30_000,
        example = 30000
    )]
    visibility_ms: Option<u64>,
    /// Long poll: when nothing is due, wait up to this many ms (0..=20000, default 0) and answer as soon as a job is.
    /// Costs one more rate-limit unit per 1000 ms. When 64 claims already wait on the queue in
    /// this gateway instance, answered at once, as if 0.
    // No `default` keyword: Swagger UI would send it rather than the example, and its sample
    // claim would not wait for the sample job, due 5 s after its enqueue.
    #[schema(minimum = 0, maximum = 20_000, example = 10000)]
    wait_ms: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
struct ClaimedView {
    id: String,
    #[schema(value_type = Value)]
    payload: Box<RawValue>,
    #[schema(value_type = String, format = DateTime)]
    run_at: String,
    /// Claims so far, this one included.
    attempts: u32,
    /// Pass it to ack; it is only good for this claim.
    #[schema(example = "1.42")]
    receipt: String,
}

#[derive(Debug, Serialize, ToSchema)]
struct ClaimReply {
    /// Oldest due first; empty when nothing was due within `wait_ms`.
    jobs: Vec<ClaimedView>,
}

/// Claim due jobs.
///
/// One atomic step in the store (whose clock is the queue's): claims whose visibility lapsed
/// are due again (attempts kept); then due jobs go out oldest first, each to exactly one
/// claimer, for `visibility_ms`, with `attempts` counting claims; a job whose attempts
/// reached its `max_attempts` moves to the dead list instead. Ack each job with its receipt
/// before the visibility ends, or it is delivered again (at-least-once).
///
/// With `wait_ms`, a claim that finds nothing due waits for a job: an enqueue wakes one
/// waiting claim per job it makes due, not all of them. At most 64 claims wait on one queue
/// in one gateway instance; a claim arriving past that is answered at once (200, with the
/// jobs due then, often none), as if `wait_ms` were 0: poll again after a pause.
#[utoipa::path(
    post, path = "/v1/queues/{queue}/claim", operation_id = "queuesClaim",
    params(("queue" = String, Path, description = name_rule!(), example = "mail")),
    request_body(content = Option<ClaimBody>, description = "Optional; an empty body takes the defaults"),
    responses(
        (status = 200, body = ClaimReply,
            description = "Due jobs, oldest first; none when nothing was due within `wait_ms`, or at once when 64 claims already wait on the queue here"),
        BackendJson,
    )
)]
async fn claim(
    State(state): State<QueuesState>,
    queue: ScopedName,
    _: NoQuery,
    OptionalJson(body): OptionalJson<ClaimBody>,
) -> ApiResult<Json<ClaimReply>> {
    let (max, visibility_ms, wait_ms) = logic::claim(body.max, body.visibility_ms, body.wait_ms)?;
    // The request timeout of this route is extended by the longest wait (its `TERMS`), so the
    // whole `wait_ms` is honoured.
    let wait = Duration::from_millis(wait_ms);
    let jobs = claim_waiting(&state.store, &queue.scoped, max, visibility_ms, wait).await?;
    Ok(Json(ClaimReply {
        jobs: jobs
            .into_iter()
            .map(|j| ClaimedView {
                id: j.id.to_string(),
                payload: json(j.payload),
                run_at: rfc3339(j.run_at),
                attempts: j.attempts,
                receipt: j.receipt,
            })
            .collect(),
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AckBody {
    /// The receipt your claim answered for this job: paste it from that answer. The example
    /// only shows the form (no claim was given it: sent as is, it answers 404 `not_found`, or
    /// 409 `receipt_expired`).
    #[schema(example = "1.42")]
    receipt: String,
}

/// Ack a claimed job: it is done and gone.
///
/// 409 `receipt_expired` when the receipt is not the job's current claim: the claim lapsed
/// (the job may have gone to another claimer), or the job is gone (acked, cancelled). 404
/// `not_found` when the queue holds no such job and never issued the receipt: the job never
/// existed.
///
/// An ack whose answer was lost (a timeout, a cut connection, a `503`) cannot tell, retried,
/// its own earlier success from a lapsed claim: both find the job gone. Send an
/// `Idempotency-Key`: a retry under it is answered `204` again (with `Idempotency-Replayed:
/// true`) when the first ack took effect. Only an ack that took effect is recorded; a refused
/// one is refused again by the same rule.
///
/// `receipt` is the one your claim answered for the job: in Swagger UI, enqueue the example
/// job (`mail-42`), claim it, and paste the claim's receipt over the example's, which no claim
/// was given (sent as is, 404 `not_found` or 409 `receipt_expired`).
#[utoipa::path(
    post, path = "/v1/queues/{queue}/jobs/{id}/ack", operation_id = "queuesAck",
    params(
        ("queue" = String, Path, description = name_rule!(), example = "mail"),
        ("id" = String, Path, description = name_rule!(), example = "mail-42"),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h"),
    ),
    request_body = AckBody,
    responses(
        (status = 204, description = "Acked (or, under an `Idempotency-Key`, acked before: \
            `Idempotency-Replayed: true`)"),
        (status = 404, body = Problem, content_type = "application/problem+json",
            description = "`not_found`: no such job, and the queue never issued this receipt"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`receipt_expired`: the claim lapsed or is not the job's current one"),
        BackendJson,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another request"),
    )
)]
async fn ack(
    State(state): State<QueuesState>,
    namespace: Namespace,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath((queue, id)): ApiPath<(Name, Name)>,
    _: NoQuery,
    ApiJson(body): ApiJson<AckBody>,
) -> Result<Response, ApiError> {
    let receipt = logic::receipt(&body.receipt)?;
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: sha256_hex(format!("ack|{id}|{receipt}").as_bytes()),
    });
    let once = state
        .store
        .queue_ack(&namespace.scope(&queue), &id, receipt, idem.as_ref())
        .await?;
    match once {
        Once::Now(Acked::Expired) => Err(ApiError::Conflict {
            code: "receipt_expired",
            detail: format!("the claim of job {id} in queue {queue} with this receipt has lapsed"),
            extra: None,
        }),
        Once::Now(Acked::Unknown) => Err(ApiError::NotFound(format!(
            "queue {queue} has no job {id} and issued no such receipt: enqueue the job, claim \
             it, and ack with the receipt the claim returned"
        ))),
        // Done now or before: the only outcome a key replays.
        once => once_reply(once, |_| StatusCode::NO_CONTENT.into_response()),
    }
}
