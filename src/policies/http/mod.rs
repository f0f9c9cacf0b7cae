//! The limit policies at the edge: the global limiter every API request goes through
//! ([`limiter`]), the admin routes (docs/policies.md "Overrides and denies": overrides and
//! denies per policy and identity, the listing of every policy in force) and the caller's own
//! view of its limits ([`me`]).

mod limiter;
mod me;

pub use limiter::GlobalRateLimitLayer;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::budget::{self, OverrideStore};
use super::overrides::{self, Override, Stored, MAX_OVERRIDES};
use super::{By, GLOBAL};
use crate::auth::Admin;
use crate::clients::Clients;
use crate::clock::Clock;
use crate::config::GlobalLimit;
use crate::error::responses::{JsonBody, NotFound, StoreErrors, Unauthorized};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, NoQuery};
use crate::paging::Page;
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::rfc3339;

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> = Some((
        "policies",
        "Limit policies: the rules in force and their runtime overrides and denies",
    ));

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .routes(routes!(me::me))
            .routes(routes!(put_override, delete_override))
            .routes(routes!(list))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<PoliciesState>()
    }
}

/// What the limit policy routes are handed (`State<PoliciesState>`), made once at start-up.
pub type PoliciesState = Slice<PolicyRoutes>;

/// The limit policy routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct PolicyRoutes {
    store: Store,
    policies: std::sync::Arc<super::Policies>,
    clients: std::sync::Arc<Clients>,
    clock: Clock,
    global: GlobalLimit,
}

impl From<&Shared> for PolicyRoutes {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            policies: shared.part::<std::sync::Arc<super::Policies>>().clone(),
            clients: shared.part::<std::sync::Arc<Clients>>().clone(),
            clock: shared.settings.clock.clone(),
            global: shared.settings.global.clone(),
        }
    }
}

/// The global limiter when enabled (or in shadow mode); `GATEWAY_GLOBAL_LIMIT=off` is none.
pub fn global_limit(
    state: &AppState,
    terms: &'static crate::middleware::costs::Terms,
) -> Option<GlobalRateLimitLayer> {
    let settings = &state.settings;
    settings.global.enabled.then(|| {
        GlobalRateLimitLayer::new(state.store.clone(), &settings.global)
            .with_trusted_proxies(settings.trusted_proxies.clone())
            .with_body_limit(settings.body_limit)
            .with_terms(terms)
            .with_policies(
                state.part::<std::sync::Arc<super::Policies>>().clone(),
                state.credentials.clone(),
            )
    })
}

/// Another budget for one identity, or a deny; `ttl_s` makes it expire.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"burst": 20, "count": 10, "period": 1, "ttl_s": 3600}))]
struct OverrideBody {
    burst: Option<u64>,
    count: Option<u64>,
    period: Option<u64>,
    /// `true`: the identity is refused (`403 forbidden`) on the policy's operations.
    deny: Option<bool>,
    /// Seconds until it expires, 1–31,536,000; absent: until deleted.
    ttl_s: Option<u64>,
}

/// An override in force.
#[derive(Debug, Serialize, ToSchema)]
struct PolicyOverride {
    #[schema(example = "global")]
    policy: String,
    #[schema(example = "203.0.113.7")]
    identity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    period: Option<u64>,
    deny: bool,
    /// RFC 3339; absent: until deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    expires_at: Option<String>,
}

impl PolicyOverride {
    fn of(policy: &str, stored: &Stored, expires_at_ms: Option<i64>) -> Self {
        Self {
            policy: policy.to_owned(),
            identity: stored.identity.clone(),
            burst: stored.burst,
            count: stored.count,
            period: stored.period,
            deny: stored.deny,
            expires_at: expires_at_ms.map(rfc3339),
        }
    }
}

impl From<&Override> for PolicyOverride {
    fn from(o: &Override) -> Self {
        Self::of(&o.policy, &o.stored, o.expires_at_ms)
    }
}

/// What `{policy}` counts (`None`: the global layer), or 404.
fn counted_by(state: &PolicyRoutes, policy: &str) -> ApiResult<Option<By>> {
    if policy == GLOBAL {
        return Ok(None);
    }
    let table = state.policies.current();
    table
        .policies
        .iter()
        .find(|p| p.name.as_str() == policy)
        .map(|p| Some(p.by.clone()))
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "no policy {policy:?} (the file in force has none of that name)"
            ))
        })
}

/// Sets another budget, or a deny, for one identity of a policy (`global`: the global layer).
#[utoipa::path(
    put, path = "/v1/admin/policies/{policy}/overrides/{identity}", operation_id = "policiesPutOverride",
    tag = "policies",
    security(("admin" = [])),
    params(
        ("policy" = String, Path, description = "`global` or a policy of GATEWAY_POLICIES_FILE", example = "global"),
        ("identity" = String, Path, description = "What the policy counts, percent-encoded: a client id, an address (an IPv6 /64), a user id, a header value, or `*` for an operation policy", example = "203.0.113.7"),
    ),
    request_body = OverrideBody,
    responses(
        (status = 201, body = PolicyOverride, description = "Created"),
        (status = 200, body = PolicyOverride, description = "Replaced"),
        JsonBody, Unauthorized, NotFound,
        (status = 409, body = crate::error::Problem, content_type = "application/problem+json",
            description = "`conflict`: the store holds as many overrides as it may (4,096)"),
    )
)]
async fn put_override(
    _: Admin,
    State(state): State<PoliciesState>,
    ApiPath((policy, identity)): ApiPath<(String, String)>,
    _: NoQuery,
    ApiJson(body): ApiJson<OverrideBody>,
) -> ApiResult<Response> {
    let by = counted_by(&state, &policy)?;
    let key =
        overrides::identity_key(&policy, by.as_ref(), &identity).map_err(ApiError::invalid)?;
    let numbers = (body.burst, body.count, body.period);
    let stored = match (body.deny.unwrap_or(false), numbers) {
        (true, (None, None, None)) => Stored {
            identity,
            burst: None,
            count: None,
            period: None,
            deny: true,
        },
        (false, (Some(burst), Some(count), Some(period))) => {
            super::budget(burst, count, period, state.policies.bounds())
                .map_err(ApiError::invalid)?;
            Stored {
                identity,
                burst: Some(burst),
                count: Some(count),
                period: Some(period),
                deny: false,
            }
        }
        _ => {
            return Err(ApiError::invalid(
                "an override is {\"burst\",\"count\",\"period\"} or {\"deny\": true}",
            ))
        }
    };
    let expires_at_ms = match body.ttl_s {
        None => None,
        Some(ttl @ 1..=31_536_000) => {
            Some(state.clock.now_ms() + i64::try_from(ttl).unwrap_or(0) * 1000)
        }
        Some(_) => return Err(ApiError::invalid("ttl_s must be 1 to 31536000")),
    };
    let put = state
        .store
        .overrides_put(
            &overrides::field(&policy, &key),
            &overrides::value(&stored, expires_at_ms),
            MAX_OVERRIDES,
        )
        .await?;
    let status = match put {
        budget::Stored::Created => StatusCode::CREATED,
        budget::Stored::Replaced => StatusCode::OK,
        budget::Stored::Full => {
            return Err(ApiError::Conflict {
                code: "conflict",
                detail: format!(
                    "the store holds {MAX_OVERRIDES} overrides already; delete some first"
                ),
                extra: None,
            })
        }
    };
    // This instance applies it at once; the others within a poll.
    state.policies.overrides().refresh(&state.store).await;
    Ok((
        status,
        Json(PolicyOverride::of(&policy, &stored, expires_at_ms)),
    )
        .into_response())
}

/// Removes the override of one identity of a policy.
#[utoipa::path(
    delete, path = "/v1/admin/policies/{policy}/overrides/{identity}", operation_id = "policiesDeleteOverride",
    tag = "policies",
    security(("admin" = [])),
    params(
        ("policy" = String, Path, description = "`global` or a policy of GATEWAY_POLICIES_FILE", example = "global"),
        ("identity" = String, Path, description = "As it was set", example = "203.0.113.7"),
    ),
    responses(
        (status = 204, description = "Removed"),
        StoreErrors, Unauthorized, NotFound,
    )
)]
async fn delete_override(
    _: Admin,
    State(state): State<PoliciesState>,
    ApiPath((policy, identity)): ApiPath<(String, String)>,
    _: NoQuery,
) -> ApiResult<StatusCode> {
    let by = counted_by(&state, &policy)?;
    let key =
        overrides::identity_key(&policy, by.as_ref(), &identity).map_err(ApiError::invalid)?;
    if !state
        .store
        .overrides_delete(&overrides::field(&policy, &key))
        .await?
    {
        return Err(ApiError::NotFound(format!(
            "{policy} has no override for {identity:?}"
        )));
    }
    state.policies.overrides().refresh(&state.store).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// The `next` of the previous page.
    after: Option<String>,
    /// 1–1000, default 100.
    limit: Option<usize>,
}

/// A limit policy's rule, as `GET /v1/clients/me` and `GET /v1/admin/policies` show it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyRule {
    #[schema(example = "buy-per-user")]
    name: String,
    /// operationIds, or `*` for every operation.
    #[schema(example = json!(["seckillBuy"]))]
    operations: Vec<String>,
    /// `client`, `address`, `user`, `header:<Name>` or `operation`.
    #[schema(example = "user")]
    by: String,
    burst: u64,
    count: u64,
    period: u64,
    /// `enforce` or `shadow`.
    #[schema(example = "enforce")]
    mode: &'static str,
}

impl From<&super::Policy> for PolicyRule {
    fn from(p: &super::Policy) -> Self {
        Self {
            name: p.name.to_string(),
            operations: p.operations.clone(),
            by: p.by.text(),
            burst: p.burst,
            count: p.count,
            period: p.period,
            mode: if p.shadow { "shadow" } else { "enforce" },
        }
    }
}

/// A policy in force, with its overrides.
#[derive(Debug, Serialize, ToSchema)]
struct PolicyListed {
    #[serde(flatten)]
    rule: PolicyRule,
    /// `settings` (the global layer: GATEWAY_GLOBAL_*) or `file` (GATEWAY_POLICIES_FILE).
    source: &'static str,
    overrides: Vec<PolicyOverride>,
}

#[derive(Debug, Serialize, ToSchema)]
struct PolicyList {
    policies: Vec<PolicyListed>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page.
    next: Option<String>,
}

/// Every policy in force — the global layer's first — with its rule, its source and its
/// overrides, paged.
#[utoipa::path(
    get, path = "/v1/admin/policies", operation_id = "policiesList",
    tag = "policies",
    security(("admin" = [])),
    params(ListQuery),
    responses(
        (status = 200, body = PolicyList),
        StoreErrors, Unauthorized,
    )
)]
async fn list(
    _: Admin,
    State(state): State<PoliciesState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<PolicyList>> {
    let page = Page::<u64>::parse(query.after.as_deref(), query.limit)?;
    let global = &state.global;
    let overrides = state.policies.overrides();
    let views = |name: &str| -> Vec<PolicyOverride> {
        overrides
            .of(name)
            .iter()
            .map(|o| PolicyOverride::from(&**o))
            .collect()
    };
    let table = state.policies.current();
    let first = std::iter::once(PolicyListed {
        rule: PolicyRule {
            name: GLOBAL.to_owned(),
            operations: vec!["*".to_owned()],
            by: "client".to_owned(),
            burst: global.max_burst,
            count: global.count_per_period,
            period: global.period,
            mode: if global.shadow { "shadow" } else { "enforce" },
        },
        source: "settings",
        overrides: views(GLOBAL),
    });
    let rest = table.policies.iter().map(|p| PolicyListed {
        rule: PolicyRule::from(&**p),
        source: "file",
        overrides: views(p.name.as_str()),
    });
    let start = page
        .after
        .map_or(0, |a| usize::try_from(a).unwrap_or(usize::MAX));
    let mut items: Vec<(u64, PolicyListed)> = first
        .chain(rest)
        .enumerate()
        .skip(start)
        .take(page.fetch())
        .map(|(i, v)| (i as u64 + 1, v))
        .collect();
    let next = page.next(&mut items, false, |(n, _)| *n);
    Ok(Json(PolicyList {
        policies: items.into_iter().map(|(_, v)| v).collect(),
        next,
    }))
}
