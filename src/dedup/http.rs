//! Dedup routes (docs/api.md "News dedup").

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoResponses, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::logic::{self, Params};
use super::{Added, DedupStore, FilterInfo, Policy, Reserved};
use crate::auth::Admin;
use crate::error::responses::{JsonBody, Lookup, Unauthorized};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, NoQuery};
use crate::middleware::costs::{Cap, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::{name_rule, Name};

/// What the dedup routes are handed (`State<DedupState>`), made once at start-up.
pub type DedupState = Slice<Dedup>;

/// The dedup routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Dedup {
    store: Store,
    settings: super::Settings,
    max_batch: usize,
    max_item_bytes: usize,
}

impl From<&Shared> for Dedup {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::dedup::Settings>().clone(),
            max_batch: shared.settings.max_batch,
            max_item_bytes: shared.settings.max_item_bytes,
        }
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> =
        Some(("dedup", "News dedup on scalable Bloom filters"));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .routes(routes!(reserve, info))
            .routes(routes!(add))
            .routes(routes!(check))
            .routes(routes!(filter))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<DedupState>()
    }
}

/// What these routes cost the global limiter (docs/ratelimit.md "Route costs"): by their body,
/// capped at the burst, since a filter's layers are allocated by its parameters, not by the batch.
pub const TERMS: &[RouteTerms] = &[
    RouteTerms::new(
        "POST",
        "/v1/dedup/{filter}/items",
        Rule::PerBody {
            base: 1,
            divisor: 512,
            cap: Cap::Capped,
        },
        "1 + body bytes / 512",
    ),
    RouteTerms::new(
        "POST",
        "/v1/dedup/{filter}/check",
        Rule::PerBody {
            base: 1,
            divisor: 4096,
            cap: Cap::Capped,
        },
        "1 + body bytes / 4096",
    ),
    RouteTerms::new(
        "POST",
        "/v1/dedup/{filter}/filter",
        Rule::PerBody {
            base: 1,
            divisor: 512,
            cap: Cap::Capped,
        },
        "1 + body bytes / 512",
    ),
];

fn policy(state: &Dedup) -> Policy {
    let s = &state.settings;
    Policy {
        defaults: Params {
            capacity: s.capacity,
            error_rate: s.error_rate,
        },
        retention_secs: u64::from(s.retention_days) * 86_400,
    }
}

/// Refuses empty or oversized batches and empty or overlong items.
fn validate_items(state: &Dedup, items: &[String]) -> ApiResult<()> {
    let max_batch = state.max_batch;
    let max_bytes = state.max_item_bytes;
    crate::extract::batch_size(items.len(), max_batch, "items")?;
    for (i, item) in items.iter().enumerate() {
        if item.is_empty() {
            return Err(ApiError::invalid(format!("items[{i}] is empty")));
        }
        if item.len() > max_bytes {
            return Err(ApiError::invalid(format!(
                "items[{i}] is {} bytes; at most {max_bytes}",
                item.len()
            )));
        }
    }
    Ok(())
}

/// Adds `items` to `filter`: per item, whether it was definitely new; `409 filter_full` when
/// the batch could grow the filter past its largest size (nothing added then).
async fn add_items(state: &Dedup, filter: &Name, items: &[String]) -> ApiResult<Vec<bool>> {
    match state.store.dedup_add(filter, items, policy(state)).await? {
        Added::Flags(flags) => Ok(flags),
        Added::Full => Err(ApiError::Conflict {
            code: "filter_full",
            detail: format!(
                "filter {filter} would grow past {} MiB; nothing was added",
                logic::MAX_FILTER_BITS / (8 << 20)
            ),
            extra: None,
        }),
    }
}

/// `filter_full`, as the document describes it (see [`add_items`]).
#[allow(dead_code)]
#[derive(Debug, IntoResponses)]
#[response(
    status = 409,
    content_type = "application/problem+json",
    description = "`filter_full`: the filter would grow past 512 MiB; nothing was added"
)]
struct FilterFull(Problem);

/// Parameters of a filter.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReserveBody {
    /// Items the first layer holds at `error_rate`; 1..=1000000000 (and the first layer at
    /// most 64 MiB). Past it the filter grows new layers.
    #[schema(example = 100_000, minimum = 1, maximum = 1_000_000_000)]
    capacity: u64,
    /// Largest false-positive rate, kept however far the filter grows; 1e-12 ≤ rate < 1.
    #[schema(example = 0.01)]
    error_rate: f64,
}

/// A filter's parameters and size.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupFilterView)]
struct FilterView {
    filter: String,
    capacity: u64,
    error_rate: f64,
    /// Items added so far (each counted once, when it was new).
    items: u64,
    /// Bytes the filter's layers take.
    bytes: u64,
    /// Layers so far: a new one, twice as large and with a tighter error rate, is added when
    /// the last one is full.
    layers: u32,
    /// `redisbloom`, `lua` or `memory`.
    #[schema(example = "lua")]
    engine: &'static str,
}

impl FilterView {
    fn new(filter: &Name, info: FilterInfo) -> Self {
        Self {
            filter: filter.to_string(),
            capacity: info.params.capacity,
            error_rate: info.params.error_rate,
            items: info.items,
            bytes: info.bytes,
            layers: info.layers,
            engine: info.engine.as_str(),
        }
    }
}

async fn view(state: &Dedup, filter: &Name) -> ApiResult<FilterView> {
    let info = state
        .store
        .dedup_info(filter)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no filter {filter}")))?;
    Ok(FilterView::new(filter, info))
}

/// Reserve a filter with a capacity and an error rate.
///
/// Without this, a filter is created on its first write with the configured defaults.
/// 201 when new, 200 when it exists with the same parameters, 409 `conflict` (with the
/// existing `capacity` and `error_rate`) when it exists with different ones.
#[utoipa::path(
    put, path = "/v1/dedup/{filter}", operation_id = "dedupReserve",
    security(("admin" = [])),
    params(("filter" = String, Path, description = concat!("Filter name: ", name_rule!()), example = "feed:42")),
    request_body = ReserveBody,
    responses(
        (status = 201, body = FilterView, description = "Created"),
        (status = 200, body = FilterView, description = "Existed with the same parameters"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`conflict`: the filter exists with other parameters"),
        JsonBody,
        Unauthorized,
    )
)]
async fn reserve(
    _admin: Admin,
    State(state): State<DedupState>,
    ApiPath(filter): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<ReserveBody>,
) -> ApiResult<(StatusCode, Json<FilterView>)> {
    let params = Params::new(body.capacity, body.error_rate).map_err(ApiError::InvalidArgument)?;
    let status = match state
        .store
        .dedup_reserve(&filter, params, policy(&state))
        .await?
    {
        Reserved::Created => StatusCode::CREATED,
        Reserved::Unchanged => StatusCode::OK,
        Reserved::Conflict(existing) => {
            let mut extra = serde_json::Map::new();
            extra.insert("capacity".to_owned(), existing.capacity.into());
            extra.insert("error_rate".to_owned(), existing.error_rate.into());
            return Err(ApiError::Conflict {
                code: "conflict",
                detail: format!(
                    "filter {filter} exists with capacity {} and error_rate {}",
                    existing.capacity, existing.error_rate
                ),
                extra: Some(extra),
            });
        }
    };
    Ok((status, Json(view(&state, &filter).await?)))
}

/// A filter's parameters, item count and size.
#[utoipa::path(
    get, path = "/v1/dedup/{filter}", operation_id = "dedupInfo",
    params(("filter" = String, Path, description = concat!("Filter name: ", name_rule!()), example = "feed:42")),
    responses((status = 200, body = FilterView), Lookup)
)]
async fn info(
    State(state): State<DedupState>,
    ApiPath(filter): ApiPath<Name>,
    _: NoQuery,
) -> ApiResult<Json<FilterView>> {
    Ok(Json(view(&state, &filter).await?))
}

/// A batch of items.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DedupItemsBody)]
struct ItemsBody {
    /// 1..=max batch (default 1000) non-empty strings of at most 512 bytes (configurable).
    #[schema(example = json!(["news:1", "news:2"]))]
    items: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupAddResult)]
struct AddResult {
    item: String,
    /// True when the item was definitely new (false: seen before, or a false positive).
    added: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupAddReply)]
struct AddReply {
    /// One per input item, in input order.
    results: Vec<AddResult>,
}

/// Add items to a filter (created on first use with the configured defaults).
///
/// An item repeated within the batch is `added` at most once, at its first position.
#[utoipa::path(
    post, path = "/v1/dedup/{filter}/items", operation_id = "dedupAdd",
    params(("filter" = String, Path, description = concat!("Filter name: ", name_rule!()), example = "feed:42")),
    request_body = ItemsBody,
    responses((status = 200, body = AddReply), FilterFull, JsonBody)
)]
async fn add(
    State(state): State<DedupState>,
    ApiPath(filter): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<ItemsBody>,
) -> ApiResult<Json<AddReply>> {
    validate_items(&state, &body.items)?;
    let flags = add_items(&state, &filter, &body.items).await?;
    let results = body
        .items
        .into_iter()
        .zip(flags)
        .map(|(item, added)| AddResult { item, added })
        .collect();
    Ok(Json(AddReply { results }))
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupCheckResult)]
struct CheckResult {
    item: String,
    /// True when the item may have been added (false: definitely not).
    seen: bool,
}

#[derive(Debug, Serialize, ToSchema)]
struct DedupCheckReply {
    /// One per input item, in input order.
    results: Vec<CheckResult>,
}

/// Check whether items were seen. Writes nothing (an unknown filter has seen nothing).
#[utoipa::path(
    post, path = "/v1/dedup/{filter}/check", operation_id = "dedupCheck",
    params(("filter" = String, Path, description = concat!("Filter name: ", name_rule!()), example = "feed:42")),
    request_body = ItemsBody,
    responses((status = 200, body = DedupCheckReply), JsonBody)
)]
async fn check(
    State(state): State<DedupState>,
    ApiPath(filter): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<ItemsBody>,
) -> ApiResult<Json<DedupCheckReply>> {
    validate_items(&state, &body.items)?;
    let seen = state
        .store
        .dedup_check(&filter, &body.items, policy(&state))
        .await?;
    let results = body
        .items
        .into_iter()
        .zip(seen)
        .map(|(item, seen)| CheckResult { item, seen })
        .collect();
    Ok(Json(DedupCheckReply { results }))
}

/// Candidates to filter.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DedupFilterBody)]
struct FilterBody {
    /// 1..=max batch (default 1000) non-empty strings of at most 512 bytes (configurable).
    #[schema(example = json!(["news:1", "news:2"]))]
    items: Vec<String>,
    /// Also record the unseen items, in the same atomic store call (default true, per docs/api.md).
    #[schema(default = true)]
    mark_seen: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = DedupFilterReply)]
struct FilterReply {
    /// The items not seen before, in input order, each at most once (at its first position).
    unseen: Vec<String>,
}

/// Keep only the items not seen before; with `mark_seen`, record them too.
#[utoipa::path(
    post, path = "/v1/dedup/{filter}/filter", operation_id = "dedupFilter",
    params(("filter" = String, Path, description = concat!("Filter name: ", name_rule!()), example = "feed:42")),
    request_body = FilterBody,
    responses((status = 200, body = FilterReply), FilterFull, JsonBody)
)]
async fn filter(
    State(state): State<DedupState>,
    ApiPath(filter): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<FilterBody>,
) -> ApiResult<Json<FilterReply>> {
    validate_items(&state, &body.items)?;
    let unseen = if body.mark_seen.unwrap_or(true) {
        // Adding in order marks a repeat as not new: its first occurrence set its bits.
        let flags = add_items(&state, &filter, &body.items).await?;
        body.items
            .into_iter()
            .zip(flags)
            .filter_map(|(item, new)| new.then_some(item))
            .collect()
    } else {
        let seen = state
            .store
            .dedup_check(&filter, &body.items, policy(&state))
            .await?;
        logic::first_occurrences(&body.items)
            .into_iter()
            .filter(|i| !seen[*i])
            .map(|i| body.items[i].clone())
            .collect()
    };
    Ok(Json(FilterReply { unseen }))
}

/// `/readyz`'s `bloom_engine` and the `gateway_info` label of that name: the engine a new
/// filter gets on this store (docs/dedup.md, its engines).
#[derive(Debug)]
pub struct BloomEngine;

impl crate::readiness::ReadyFact for BloomEngine {
    fn name(&self) -> &'static str {
        "bloom_engine"
    }

    fn probe<'a>(
        &'a self,
        store: &'a crate::store::Store,
    ) -> futures::future::BoxFuture<'a, Result<&'static str, crate::store::StoreError>> {
        Box::pin(async move { Ok(store.dedup_engine().await?.as_str()) })
    }
}
