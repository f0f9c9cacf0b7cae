//! Rate-limit check route (docs/api.md "Rate-limit checks").

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::logic::{Decision, Gcra, Window, WindowKind, SLIDING_MAX_COUNT, SLIDING_MAX_QUANTITY};
use super::{Bucket, RateLimitStore, Spend};
use crate::clients::{IdempotencyKey, Namespace};
use crate::error::responses::BackendJson;
use crate::error::{ApiError, ApiResult};
use crate::extract::{idempotency_key_doc, replayed, ApiJson, NoQuery};
use crate::middleware::costs::{Cap, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::{Idempotency, Name, Once};

/// Largest `max_burst`, `count_per_period` and `quantity` (docs/api.md).
pub const MAX_COUNT: u64 = 1_000_000;
/// Longest `period`: a year of seconds (docs/api.md).
pub const MAX_PERIOD: u64 = 31_536_000;

/// What the rate-limit routes are handed (`State<RatelimitState>`), made once at start-up.
pub type RatelimitState = Slice<Ratelimit>;

/// The rate-limit routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Ratelimit {
    store: Store,
    settings: super::Settings,
}

impl From<&Shared> for Ratelimit {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::ratelimit::Settings>().clone(),
        }
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> = Some((
        "ratelimit",
        "GCRA rate-limit checks, CL.THROTTLE-equivalent",
    ));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new().routes(routes!(check))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<RatelimitState>()
    }
}

/// What a check costs the global limiter (docs/ratelimit.md "Route costs"): 1, but a
/// `sliding_window` check stores one sorted-set member (~130 B) per admitted unit, so it costs
/// 1 + min(quantity, count_per_period) / 8 from its small body, and more than the burst is
/// refused.
pub const TERMS: &[RouteTerms] = &[RouteTerms::new(
    "POST",
    "/v1/ratelimit/check",
    Rule::Body(check_cost, Cap::Uncapped),
    "1; sliding_window: 1 + min(quantity, count_per_period) / 8 (more than the caller's burst is refused with 413)",
)];

fn check_cost(body: &[u8]) -> u64 {
    #[derive(serde::Deserialize)]
    struct Check {
        algorithm: Option<String>,
        count_per_period: Option<u64>,
        quantity: Option<u64>,
    }
    let stored = serde_json::from_slice::<Check>(body)
        .ok()
        .filter(|c| c.algorithm.as_deref() == Some("sliding_window"))
        .map_or(0, |c| {
            c.quantity.unwrap_or(1).min(c.count_per_period.unwrap_or(0))
        });
    1 + stored / 8
}

/// Which limiter decides (docs/api.md "Rate-limit checks"); each keeps its own keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum Algorithm {
    /// GCRA, exactly redis-cell's `CL.THROTTLE`.
    #[default]
    Gcra,
    /// The exact sliding log: at most `count_per_period` units in any `period`-second window
    /// (`count_per_period` ≤ 10,000, `quantity` ≤ 1,000; no `max_burst`).
    SlidingWindow,
    /// A counter per window of `period` seconds aligned to the store's clock (no `max_burst`).
    FixedWindow,
}

/// A throttle request, `CL.THROTTLE key max_burst count_per_period period quantity`, or one of
/// the simple limiters with `algorithm`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RateLimitCheck {
    /// `gcra` (default), `sliding_window` or `fixed_window`.
    algorithm: Option<Algorithm>,
    /// The bucket: 1–128 characters of `[A-Za-z0-9._:@-]`.
    #[schema(value_type = String, example = "user:42:login")]
    key: Name,
    /// GCRA (required there): units allowed at once beyond the first (the limit is
    /// `max_burst + 1`), 0–1,000,000. The window algorithms take none (omitted or 0).
    #[schema(minimum = 0, maximum = 1_000_000, example = 15)]
    max_burst: Option<u64>,
    /// Units refilled per period (GCRA) or allowed per window, 1–1,000,000 (sliding window:
    /// 1–10,000).
    #[schema(minimum = 1, maximum = 1_000_000, example = 30)]
    count_per_period: u64,
    /// The period in seconds, 1–31,536,000.
    #[schema(minimum = 1, maximum = 31_536_000, example = 60)]
    period: u64,
    /// Units to spend, 0–1,000,000 (sliding window: 0–1,000, so one check stays a short
    /// call; default 1). 0 peeks without spending; more than the limit is valid and always
    /// denied.
    #[schema(minimum = 0, maximum = 1_000_000, default = 1, example = 1)]
    quantity: Option<u64>,
}

/// One throttle decision, as redis-cell's `CL.THROTTLE` returns it.
#[derive(Debug, Serialize, ToSchema)]
struct RateLimitDecision {
    /// Whether the units were spent. A denied check is still a 200.
    allowed: bool,
    /// `max_burst + 1` (GCRA) or `count_per_period` (window algorithms).
    limit: u64,
    /// Units that would still be allowed right now.
    remaining: u64,
    /// Seconds until the same request would be allowed; −1 when allowed, or when the quantity
    /// exceeds the limit and can never fit. Rounded as redis-cell does (up past 1 ms).
    #[schema(example = -1)]
    retry_after: i64,
    /// Seconds until the bucket is full again (rounded as redis-cell does); sliding window:
    /// until the window holds no unit; fixed window: to the window's end.
    reset_after: i64,
    /// `retry_after` in milliseconds, rounded up; −1 likewise.
    #[schema(example = -1)]
    retry_after_ms: i64,
    /// `reset_after` in milliseconds, rounded up.
    reset_after_ms: i64,
}

/// Check (and spend from) a GCRA bucket, CL.THROTTLE-equivalent.
///
/// Answers exactly what redis-cell's `CL.THROTTLE key max_burst count_per_period period
/// quantity` answers for the same history. Nothing is stored for a denied check or a peek
/// (`quantity: 0`), and a bucket's key expires once it is full again.
///
/// `algorithm` picks `sliding_window` (the exact sliding log on a sorted set, at most
/// `count_per_period` units in any `period`) or `fixed_window` (`INCRBY` + `EXPIRE` per window
/// of the store's clock) instead; same reply, separate keys, no `max_burst`.
///
/// With an `Idempotency-Key`, a repeat of the same check within 24 h answers the first
/// decision again (with `Idempotency-Replayed: true`) and spends nothing; the same key with
/// another check is 422.
#[utoipa::path(
    post, path = "/v1/ratelimit/check", operation_id = "ratelimitCheck",
    params(("Idempotency-Key" = Option<String>, Header, description = idempotency_key_doc!())),
    request_body = RateLimitCheck,
    responses(
        (status = 200, body = RateLimitDecision, description = "The decision, allowed or denied"),
        BackendJson,
        (status = 422, body = crate::error::Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another check"),
    )
)]
async fn check(
    State(state): State<RatelimitState>,
    namespace: Namespace,
    IdempotencyKey(key): IdempotencyKey,
    _: NoQuery,
    ApiJson(mut body): ApiJson<RateLimitCheck>,
) -> ApiResult<Response> {
    let quantity = body.quantity.unwrap_or(1);
    let kind = match body.algorithm.unwrap_or_default() {
        Algorithm::Gcra => None,
        Algorithm::SlidingWindow => Some(WindowKind::Sliding),
        Algorithm::FixedWindow => Some(WindowKind::Fixed),
    };
    let (max_count, max_quantity) = match kind {
        Some(WindowKind::Sliding) => (SLIDING_MAX_COUNT, SLIDING_MAX_QUANTITY),
        _ => (MAX_COUNT, MAX_COUNT),
    };
    in_range("count_per_period", body.count_per_period, 1, max_count)?;
    in_range("period", body.period, 1, MAX_PERIOD)?;
    in_range("quantity", quantity, 0, max_quantity)?;
    let max_ttl_s = state.settings.max_ttl_s;
    // The caller's own key: another caller's same string is another bucket.
    let shown = body.key.clone();
    body.key = namespace.scope(&body.key);
    let Some(kind) = kind else {
        let max_burst = body
            .max_burst
            .ok_or_else(|| ApiError::invalid("max_burst is required for gcra"))?;
        in_range("max_burst", max_burst, 0, MAX_COUNT)?;
        // The key lives until its bucket is full again: at most this long.
        let full_ms = u128::from(max_burst + 1) * u128::from(body.period) * 1000
            / u128::from(body.count_per_period);
        if full_ms > u128::from(max_ttl_s) * 1000 {
            return Err(ApiError::invalid(format!(
                "(max_burst + 1) x period / count_per_period is how long the key {shown} lives, \
                 {full_ms} ms here: at most {max_ttl_s} s (GATEWAY_RATELIMIT_MAX_TTL_S)"
            )));
        }
        return gcra_check(&state, key, body, shown, max_burst, quantity).await;
    };
    window_check(&state, key, body, shown, kind, quantity).await
}

/// A check of a window algorithm (`kind`), its common fields checked; `shown` is the key as
/// the caller sent it.
async fn window_check(
    state: &Ratelimit,
    key: Option<String>,
    body: RateLimitCheck,
    shown: Name,
    kind: WindowKind,
    quantity: u64,
) -> ApiResult<Response> {
    let max_ttl_s = state.settings.max_ttl_s;
    if body.period > max_ttl_s {
        return Err(ApiError::invalid(format!(
            "a window's key lives for its period: period must be at most {max_ttl_s} s \
             (GATEWAY_RATELIMIT_MAX_TTL_S), got {}",
            body.period
        )));
    }
    if body.max_burst.is_some_and(|b| b != 0) {
        return Err(ApiError::invalid(
            "max_burst is GCRA's; the window algorithms take none (omit it or send 0)",
        ));
    }
    let window = Window {
        kind,
        limit: body.count_per_period,
        period: i128::from(body.period) * 1_000_000,
    };
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: format!(
            "{:?}|{}|{}|{}|{}",
            kind, shown, body.count_per_period, body.period, quantity
        ),
    });
    match state
        .store
        .ratelimit_window_once(
            &body.key,
            Spend {
                limit: &window,
                quantity,
                idem: idem.as_ref(),
            },
        )
        .await?
    {
        Once::Now(seen) => Ok(reply(window.decide(quantity, &seen))),
        Once::Replayed(seen) => Ok(replayed(reply(window.decide(quantity, &seen)))),
        Once::KeyReused => Err(key_reused()),
    }
}

fn key_reused() -> ApiError {
    ApiError::Unprocessable("this Idempotency-Key was used for a different check".to_owned())
}

fn reply(decision: Decision) -> Response {
    let r = decision.reply();
    Json(RateLimitDecision {
        allowed: r.allowed,
        limit: r.limit,
        remaining: r.remaining,
        retry_after: r.retry_after,
        reset_after: r.reset_after,
        retry_after_ms: r.retry_after_ms,
        reset_after_ms: r.reset_after_ms,
    })
    .into_response()
}

async fn gcra_check(
    state: &Ratelimit,
    key: Option<String>,
    body: RateLimitCheck,
    shown: Name,
    max_burst: u64,
    quantity: u64,
) -> ApiResult<Response> {
    let gcra = Gcra::new(max_burst, body.count_per_period, body.period);
    // The fingerprint GCRA checks had before `algorithm` existed, so their records still match.
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: format!(
            "{}|{}|{}|{}|{}",
            shown, max_burst, body.count_per_period, body.period, quantity
        ),
    });
    match state
        .store
        .ratelimit_throttle_once(
            &Bucket::Key(body.key),
            Spend {
                limit: &gcra,
                quantity,
                idem: idem.as_ref(),
            },
        )
        .await?
    {
        Once::Now(decision) => Ok(reply(decision)),
        Once::Replayed(decision) => Ok(replayed(reply(decision))),
        Once::KeyReused => Err(key_reused()),
    }
}

fn in_range(field: &str, value: u64, min: u64, max: u64) -> Result<(), ApiError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "{field} must be within {min}..={max}, got {value}"
        )))
    }
}
