//! Delayed-queue routes (docs/api.md "Delayed queues").

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    claim_waiting, logic, Acked, Cancelled, DeadJob, Enqueued, Idempotency, NewJob, Once,
    QueueStore,
};
use crate::clients::Namespace;
use crate::error::responses::{NeedsApiKey, NotFound, NotJson, StoreErrors, TooLarge};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{replayed, ApiJson, ApiPath, ApiQuery, IdempotencyKey, OptionalJson};
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::paging::Page;
use crate::state::AppState;
use crate::types::{name_rule, sha256_hex, Name};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(enqueue))
        .routes(routes!(claim))
        .routes(routes!(ack))
        .routes(routes!(cancel))
        .routes(routes!(stats))
        .routes(routes!(dead))
}

/// What these routes declare to the shared layers (README "Route costs").
pub const TERMS: &[RouteTerms] = &[
    // A job's payload is up to 64 KiB and is stored as sent: ~1 KiB per unit keeps the
    // abuse budget. Its id is stored three times (due set, meta and payload hashes), and one
    // longer than 64 bytes turns all three from listpacks into hash tables and a skip list:
    // a small job with a 128-character id on a new queue stores ~2.5 KB, ~3.4 KB with a
    // 1,023-byte body, hence the base of 3 (README "Abuse budget"). The largest job (67
    // units, 68 with an Idempotency-Key) still fits the default burst.
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

fn rfc3339(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A field that must be present but may be JSON `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn json(payload: &str) -> Value {
    serde_json::from_str(payload).unwrap_or(Value::Null)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct EnqueueBody {
    /// Any JSON value, at most 65536 bytes serialized.
    #[schema(required = true, example = json!({"to": "a@example.com"}))]
    #[serde(default, deserialize_with = "present")]
    payload: Option<Value>,
    /// Due this many ms after the store's now, 0..=31536000000 (default 0). Not with `run_at`.
    #[schema(example = 5000)]
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
    #[schema(example = 10)]
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
    post,
    path = "/v1/queues/{queue}/jobs",
    operation_id = "queuesEnqueue",
    tag = "queues",
    params(
        ("queue" = String, Path, description = name_rule!()),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h"),
    ),
    request_body = EnqueueBody,
    responses(
        (status = 201, body = JobRef, description = "Enqueued"),
        (status = 200, body = JobRef, description = "A job with this id exists; nothing changed"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`queue_full`: the queue holds GATEWAY_QUEUE_MAX_JOBS live jobs"),
        StoreErrors,
        NeedsApiKey,
        TooLarge,
        NotJson,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another request"),
    )
)]
async fn enqueue(
    State(state): State<AppState>,
    namespace: Namespace,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(queue): ApiPath<Name>,
    ApiJson(body): ApiJson<EnqueueBody>,
) -> Result<Response, ApiError> {
    let payload = body
        .payload
        .as_ref()
        .ok_or_else(|| ApiError::invalid("payload is required (any JSON value)"))?;
    let payload = logic::payload(payload)?;
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
    let due = logic::due(body.delay_ms, run_at, state.settings.clock.now_ms())?;
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
    let id = match body.id {
        Some(id) => id,
        None => Name::try_from(format!("{:032x}", rand::random::<u128>())).expect("hex is a name"),
    };
    let job = NewJob {
        id,
        payload,
        due,
        max_attempts,
    };
    let reply = |outcome: Enqueued| match outcome {
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
            detail: format!(
                "queue {queue} holds {} jobs (GATEWAY_QUEUE_MAX_JOBS)",
                state.settings.queue_max_jobs
            ),
            extra: None,
        }
        .into_response(),
    };
    match state
        .store
        .queue_enqueue(
            &namespace.scope(&queue),
            &job,
            state.settings.queue_max_jobs,
            idem.as_ref(),
        )
        .await?
    {
        Once::Now(outcome) => Ok(reply(outcome)),
        Once::Replayed(outcome) => Ok(replayed(reply(outcome))),
        Once::KeyReused => Err(ApiError::Unprocessable(
            "this Idempotency-Key was used for a different request".to_owned(),
        )),
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    /// Most jobs to claim, 1..=100 (default 1). Fewer come back once their payloads pass
    /// 1 MiB.
    #[schema(example = 10)]
    max: Option<u32>,
    /// How long the claim holds the jobs before they are due again, 1000..=43200000 ms
    /// (default 30000).
    #[schema(example = 30000)]
    visibility_ms: Option<u64>,
    /// Long poll: when nothing is due, wait up to this many ms (0..=20000, default 0) and answer as soon as a job is.
    /// Costs one more rate-limit unit per 1000 ms. When 64 claims already wait on the queue in
    /// this gateway instance, answered at once, as if 0.
    #[schema(example = 10000)]
    wait_ms: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
struct ClaimedView {
    id: String,
    payload: Value,
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
    post,
    path = "/v1/queues/{queue}/claim",
    operation_id = "queuesClaim",
    tag = "queues",
    params(("queue" = String, Path, description = name_rule!())),
    request_body(content = Option<ClaimBody>, description = "Optional; an empty body takes the defaults"),
    responses(
        (status = 200, body = ClaimReply,
            description = "Due jobs, oldest first; none when nothing was due within `wait_ms`, or at once when 64 claims already wait on the queue here"),
        StoreErrors,
        NeedsApiKey,
        TooLarge,
        NotJson,
    )
)]
async fn claim(
    State(state): State<AppState>,
    namespace: Namespace,
    ApiPath(queue): ApiPath<Name>,
    OptionalJson(body): OptionalJson<ClaimBody>,
) -> ApiResult<Json<ClaimReply>> {
    let (max, visibility_ms, wait_ms) = logic::claim(body.max, body.visibility_ms, body.wait_ms)?;
    // The request timeout of this route is extended by the longest wait (its `TERMS`), so the
    // whole `wait_ms` is honoured.
    let wait = Duration::from_millis(wait_ms);
    let jobs = claim_waiting(
        &state.store,
        &namespace.scope(&queue),
        max,
        visibility_ms,
        wait,
    )
    .await?;
    Ok(Json(ClaimReply {
        jobs: jobs
            .into_iter()
            .map(|j| ClaimedView {
                id: j.id.to_string(),
                payload: json(&j.payload),
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
    /// The receipt of the claim.
    #[schema(example = "1.42")]
    receipt: String,
}

/// Ack a claimed job: it is done and gone.
///
/// 409 `receipt_expired` when the receipt is not the job's current claim: the claim lapsed
/// (the job may have gone to another claimer), or the job is gone.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/jobs/{id}/ack",
    operation_id = "queuesAck",
    tag = "queues",
    params(
        ("queue" = String, Path, description = name_rule!()),
        ("id" = String, Path, description = name_rule!()),
    ),
    request_body = AckBody,
    responses(
        (status = 204, description = "Acked"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`receipt_expired`: the claim lapsed or is not the job's current one"),
        StoreErrors,
        NeedsApiKey,
        TooLarge,
        NotJson,
    )
)]
async fn ack(
    State(state): State<AppState>,
    namespace: Namespace,
    ApiPath((queue, id)): ApiPath<(Name, Name)>,
    ApiJson(body): ApiJson<AckBody>,
) -> ApiResult<StatusCode> {
    let receipt = logic::receipt(&body.receipt)?;
    match state
        .store
        .queue_ack(&namespace.scope(&queue), &id, receipt)
        .await?
    {
        Acked::Done => Ok(StatusCode::NO_CONTENT),
        Acked::Expired => Err(ApiError::Conflict {
            code: "receipt_expired",
            detail: format!("the claim of job {id} in queue {queue} with this receipt has lapsed"),
            extra: None,
        }),
    }
}

/// Cancel a job that is not in flight (waiting, delayed, lapsed or dead).
#[utoipa::path(
    delete,
    path = "/v1/queues/{queue}/jobs/{id}",
    operation_id = "queuesCancel",
    tag = "queues",
    params(
        ("queue" = String, Path, description = name_rule!()),
        ("id" = String, Path, description = name_rule!()),
    ),
    responses(
        (status = 204, description = "Cancelled"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`conflict`: the job is claimed and its visibility has not ended"),
        StoreErrors,
        NeedsApiKey,
        NotFound,
    )
)]
async fn cancel(
    State(state): State<AppState>,
    namespace: Namespace,
    ApiPath((queue, id)): ApiPath<(Name, Name)>,
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
    get,
    path = "/v1/queues/{queue}",
    operation_id = "queuesStats",
    tag = "queues",
    params(("queue" = String, Path, description = name_rule!())),
    responses(
        (status = 200, body = StatsView),
        StoreErrors,
        NeedsApiKey,
    )
)]
async fn stats(
    State(state): State<AppState>,
    namespace: Namespace,
    ApiPath(queue): ApiPath<Name>,
) -> ApiResult<Json<StatsView>> {
    let s = state.store.queue_stats(&namespace.scope(&queue)).await?;
    Ok(Json(StatsView {
        queue: queue.to_string(),
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
    payload: Value,
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
    get,
    path = "/v1/queues/{queue}/dead",
    operation_id = "queuesDead",
    tag = "queues",
    params(("queue" = String, Path, description = name_rule!()), DeadQuery),
    responses(
        (status = 200, body = DeadPage),
        StoreErrors,
        NeedsApiKey,
    )
)]
async fn dead(
    State(state): State<AppState>,
    namespace: Namespace,
    ApiPath(queue): ApiPath<Name>,
    ApiQuery(q): ApiQuery<DeadQuery>,
) -> ApiResult<Json<DeadPage>> {
    let page = Page::<u64>::parse(q.after.as_deref(), q.limit)?;
    let mut jobs: Vec<DeadJob> = state
        .store
        .queue_dead(&namespace.scope(&queue), page.after, page.fetch())
        .await?;
    // A page the store ended at its byte budget may have a next page too (at worst empty).
    let bytes: u64 = jobs.iter().map(|j| j.payload.len() as u64).sum();
    let next = page.next(&mut jobs, bytes >= super::CLAIM_BYTES, |j| j.seq);
    Ok(Json(DeadPage {
        jobs: jobs
            .into_iter()
            .map(|j| DeadView {
                id: j.id.to_string(),
                payload: json(&j.payload),
                run_at: rfc3339(j.run_at),
                attempts: j.attempts,
            })
            .collect(),
        next,
    }))
}
