//! Lock routes (docs/api.md "Distributed locks").

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::logic::{MAX_WAIT_MS, TTL_MS};
use super::{acquire, Attempt, Lock, LockStore};
use crate::clients::ScopedName;
use crate::error::responses::{Backend, BackendJson};
use crate::error::{set_retry_after, ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, NoQuery};
use crate::middleware::costs::{Cap, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::{name_rule, rfc3339, Name};

/// What the lock routes are handed (`State<LocksState>`), made once at start-up.
pub type LocksState = Slice<Locks>;

/// The lock routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Locks {
    store: Store,
}

impl From<&Shared> for Locks {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
        }
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = crate::config::NoFlags;

    const TAG: Option<(&'static str, &'static str)> =
        Some(("locks", "Distributed locks with fencing tokens"));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .routes(routes!(acquire_lock, release_lock, inspect_lock))
            .routes(routes!(renew_lock))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<LocksState>()
    }
}

/// What these routes declare to the shared layers (docs/ratelimit.md "Route costs"). Lock steps are
/// single-key, storing ~250 B per new name (one key: lease, token, owner): 1 for renew, release
/// and inspect, and for an acquisition that does not wait. One that waits holds a place among
/// the lock's waiting acquisitions and a connection (no store connection: it sleeps on a
/// wake-up) for its `wait_ms`, and tries once more at its end: one unit more per second it
/// may wait, 11 at the longest wait, within the default burst. Its request timeout is
/// extended by the longest wait.
pub const TERMS: &[RouteTerms] = &[RouteTerms::new(
    "POST",
    "/v1/locks/{name}",
    Rule::Body(acquire_cost, Cap::Capped),
    "1 + wait_ms / 1000 (a waiting acquisition pays for the time it may wait: 11 at the longest)",
)
.waiting(std::time::Duration::from_millis(MAX_WAIT_MS))];

/// A body the handler will refuse costs 1 (the handler says what is wrong with it).
fn acquire_cost(body: &[u8]) -> u64 {
    #[derive(Deserialize)]
    struct Acquire {
        wait_ms: Option<u64>,
    }
    let wait_ms = serde_json::from_slice::<Acquire>(body)
        .ok()
        .and_then(|a| a.wait_ms)
        .filter(|w| *w <= MAX_WAIT_MS)
        .unwrap_or(0);
    1 + wait_ms / 1000
}

/// Acquire a lock.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct AcquireLock {
    /// Who holds it: 1-128 of `[A-Za-z0-9._:@-]`.
    #[schema(value_type = String, example = "worker-7")]
    owner: Name,
    /// The lease, 100–3,600,000 ms.
    #[schema(minimum = 100, maximum = 3_600_000, example = 30_000)]
    ttl_ms: u64,
    /// How long to wait for another holder to let go, 0–10,000 ms (default 0). Costs one more
    /// rate-limit unit per 1000 ms. When 64 acquisitions already wait on the lock in this
    /// gateway instance, answered at once, as if 0.
    #[schema(minimum = 0, maximum = 10_000, default = 0, example = 5_000)]
    wait_ms: Option<u64>,
}

/// Renew a lock.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RenewLock {
    #[schema(value_type = String, example = "worker-7")]
    owner: Name,
    /// The fencing token your acquisition answered: paste it from that answer. The example
    /// only shows the form (no lock holds it: sent as is, it answers 409 `lock_lost`).
    #[schema(example = 1_795_402_770_000_001_u64)]
    token: u64,
    /// The new lease from now, 100–3,600,000 ms.
    #[schema(minimum = 100, maximum = 3_600_000, example = 30_000)]
    ttl_ms: u64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ReleaseQuery {
    /// The holder.
    #[param(value_type = String, example = "worker-7")]
    owner: Name,
    /// The fencing token your acquisition answered: paste it from that answer. The example
    /// only shows the form (no lock holds it: sent as is, it answers 409 `lock_lost`).
    #[param(example = 1_795_402_770_000_001_u64)]
    token: u64,
}

/// A held lock.
#[derive(Debug, Serialize, ToSchema)]
struct LockView {
    #[schema(value_type = String)]
    name: Name,
    #[schema(value_type = String)]
    owner: Name,
    /// The fencing token: strictly increasing per name, never handed out twice. Pass it to
    /// the storage you protect, which refuses writes with an older token.
    // The clock in µs when the lease began: the ttl example (30 s) before expires_at's, as a
    // real answer's are.
    #[schema(example = 1_795_402_770_000_001_u64)]
    token: u64,
    /// When the lease ends (RFC 3339, ms, the store's clock).
    #[schema(format = DateTime, example = "2026-11-23T03:00:00.000Z")]
    expires_at: String,
}

/// A lock's state. Never its token: with the owner and token anyone could release, renew or
/// take over the lease, so only the acquisition's answer carries it.
#[derive(Debug, Serialize, ToSchema)]
struct LockState {
    #[schema(value_type = String)]
    name: Name,
    held: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    owner: Option<Name>,
    /// When the lease ends (RFC 3339, ms, the store's clock); absent when free.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    expires_at: Option<String>,
}

fn view(name: Name, lock: Lock) -> Json<LockView> {
    Json(LockView {
        name,
        owner: lock.owner,
        token: lock.token,
        expires_at: rfc3339(lock.expires_at_ms),
    })
}

fn ttl(ttl_ms: u64) -> Result<(), ApiError> {
    if TTL_MS.contains(&ttl_ms) {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "ttl_ms must be within 100..=3600000, got {ttl_ms}"
        )))
    }
}

fn lost(name: &Name) -> ApiError {
    ApiError::Conflict {
        code: "lock_lost",
        detail: format!(
            "lock {name} is not held by this owner and token (released, expired or taken)"
        ),
        extra: None,
    }
}

/// Acquire a lock (`SET NX PX` with a fencing token).
///
/// Free, or already held by the same `owner` (then extended, same token): 200 with a fencing
/// token that strictly increases with every acquisition of the name and is never handed out
/// twice, also across expiry, release and a store restart. Held by another owner: waits up to
/// `wait_ms`, woken by a release (not polling), then `409 lock_held` with `retry_after_ms`.
/// A release wakes one waiting acquisition per gateway instance, the one it can serve, not
/// all of them. At most 64 acquisitions wait on one lock in one gateway instance; one arriving
/// past that is answered at once, as if its `wait_ms` were 0.
#[utoipa::path(
    post, path = "/v1/locks/{name}", operation_id = "locksAcquire",
    params(("name" = String, Path, description = concat!("Lock name: ", name_rule!()), example = "report:daily")),
    request_body = AcquireLock,
    responses(
        (status = 200, body = LockView, description = "Acquired (or extended by its holder)"),
        (status = 409, body = crate::error::Problem, content_type = "application/problem+json",
            description = "`lock_held`: another owner holds it (after `wait_ms`, or at once when 64 acquisitions already wait on the lock here); `retry_after_ms` says for how long",
            headers(("Retry-After" = u64, description = "`retry_after_ms` in whole seconds, rounded up, at least 1"))),
        BackendJson,
    )
)]
async fn acquire_lock(
    State(state): State<LocksState>,
    lock: ScopedName,
    _: NoQuery,
    ApiJson(body): ApiJson<AcquireLock>,
) -> ApiResult<Response> {
    ttl(body.ttl_ms)?;
    let wait_ms = body.wait_ms.unwrap_or(0);
    if wait_ms > MAX_WAIT_MS {
        return Err(ApiError::invalid(format!(
            "wait_ms must be within 0..={MAX_WAIT_MS}, got {wait_ms}"
        )));
    }
    let wait = Duration::from_millis(wait_ms);
    let name = lock.name;
    match acquire(&state.store, &lock.scoped, &body.owner, body.ttl_ms, wait).await? {
        Attempt::Acquired(held) => Ok(view(name, held).into_response()),
        Attempt::Held { retry_after_ms } => {
            let mut extra = serde_json::Map::new();
            extra.insert("retry_after_ms".to_owned(), retry_after_ms.into());
            let mut refused = ApiError::Conflict {
                code: "lock_held",
                detail: format!("lock {name} is held by another owner"),
                extra: Some(extra),
            }
            .into_response();
            set_retry_after(refused.headers_mut(), Duration::from_millis(retry_after_ms));
            Ok(refused)
        }
    }
}

/// Renew a lock still held by this owner and token.
///
/// `token` is the one your acquisition answered: in Swagger UI, paste it over the example's,
/// which no lock holds (sent as is, 409 `lock_lost`).
#[utoipa::path(
    post, path = "/v1/locks/{name}/renew", operation_id = "locksRenew",
    params(("name" = String, Path, description = concat!("Lock name: ", name_rule!()), example = "report:daily")),
    request_body = RenewLock,
    responses(
        (status = 200, body = LockView, description = "Extended: the lease now ends `ttl_ms` from now"),
        (status = 409, body = crate::error::Problem, content_type = "application/problem+json",
            description = "`lock_lost`: released, expired, or held by someone else"),
        BackendJson,
    )
)]
async fn renew_lock(
    State(state): State<LocksState>,
    lock: ScopedName,
    _: NoQuery,
    ApiJson(body): ApiJson<RenewLock>,
) -> ApiResult<Json<LockView>> {
    ttl(body.ttl_ms)?;
    match state
        .store
        .lock_renew(&lock.scoped, &body.owner, body.token, body.ttl_ms)
        .await?
    {
        Some(held) => Ok(view(lock.name, held)),
        None => Err(lost(&lock.name)),
    }
}

/// Release a lock, only by its holder (compare-and-delete in one step).
///
/// `token` is the one your acquisition answered: in Swagger UI, paste it over the example's,
/// which no lock holds (sent as is, 409 `lock_lost`).
#[utoipa::path(
    delete, path = "/v1/locks/{name}", operation_id = "locksRelease",
    params(("name" = String, Path, description = concat!("Lock name: ", name_rule!()), example = "report:daily"), ReleaseQuery),
    responses(
        (status = 204, description = "Released; waiting acquirers are woken"),
        (status = 409, body = crate::error::Problem, content_type = "application/problem+json",
            description = "`lock_lost`: not held by this owner and token"),
        Backend,
    )
)]
async fn release_lock(
    State(state): State<LocksState>,
    lock: ScopedName,
    ApiQuery(q): ApiQuery<ReleaseQuery>,
) -> ApiResult<StatusCode> {
    if state
        .store
        .lock_release(&lock.scoped, &q.owner, q.token)
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(lost(&lock.name))
    }
}

/// Who holds a lock, and until when (never its fencing token).
#[utoipa::path(
    get, path = "/v1/locks/{name}", operation_id = "locksInspect",
    params(("name" = String, Path, description = concat!("Lock name: ", name_rule!()), example = "report:daily")),
    responses((status = 200, body = LockState, description = "The holder, if any"), Backend)
)]
async fn inspect_lock(
    State(state): State<LocksState>,
    lock: ScopedName,
    _: NoQuery,
) -> ApiResult<Json<LockState>> {
    let held = state.store.lock_inspect(&lock.scoped).await?;
    Ok(Json(LockState {
        name: lock.name,
        held: held.is_some(),
        owner: held.as_ref().map(|l| l.owner.clone()),
        expires_at: held.map(|l| rfc3339(l.expires_at_ms)),
    }))
}
