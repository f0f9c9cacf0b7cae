//! The inventory's routes (docs/inventory.md), both **admin**: `GET /v1/admin/keys` walks the
//! gateway's keys a `SCAN` step per page, and `GET /v1/admin/keys/big` finds the largest
//! within a budget. Here too their costs, their 400 for a cursor the store never handed out and
//! their 409 for one whose Cluster master is gone.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Cursor, InventoryStore, Kind, Measured, Refused, BIG_KEYS_BUDGET};
use crate::auth::Admin;
use crate::error::responses::{StoreErrors, Unauthorized};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::middleware::costs::{Query, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;

/// What the inventory routes are handed (`State<InventoryState>`), made once at start-up.
pub type InventoryState = Slice<Inventory>;

/// The inventory routes' slice of the state: the store.
#[derive(Debug)]
pub struct Inventory {
    store: Store,
}

impl From<&Shared> for Inventory {
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

    const TAG: Option<(&'static str, &'static str)> = Some((
        "inventory",
        "What the store holds: the gateway's keys by kind, with their memory and TTL (admin)",
    ));
    const TERMS: &'static [RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .routes(routes!(keys))
            .routes(routes!(big_keys))
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<InventoryState>()
    }
}

/// A page's `SCAN` `COUNT` when the request names none.
const DEFAULT_COUNT: u32 = 100;
/// The largest `COUNT`: what one `SCAN` examines, and so what one pipeline measures at most.
const MAX_COUNT: u32 = 1000;
/// The largest keys' answer when the request names no `limit`, and its largest.
const DEFAULT_LIMIT: usize = 10;
const MAX_LIMIT: usize = 100;

/// What these routes cost the global limiter (docs/api.md "Route costs"): a page what its
/// `COUNT` examines, 1 unit per 100 keys, and the largest keys what their budget measures.
pub const TERMS: &[RouteTerms] = &[
    RouteTerms::new(
        "GET",
        "/v1/admin/keys",
        Rule::Query(keys_cost),
        "1 + count / 100",
    ),
    RouteTerms::new(
        "GET",
        "/v1/admin/keys/big",
        Rule::Query(big_keys_cost),
        "51 (1 + the 5,000 keys it may measure / 100)",
    ),
];

fn keys_cost(q: &Query<'_>) -> u64 {
    1 + q.number("count", u64::from(DEFAULT_COUNT)) / 100
}

fn big_keys_cost(_: &Query<'_>) -> u64 {
    1 + BIG_KEYS_BUDGET / 100
}

/// One key of the store.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = InventoryKey)]
struct KeyView {
    /// The whole key, prefix included, as `redis-cli` names it.
    #[schema(example = "gw:sk:{v1}:orders")]
    key: String,
    kind: Kind,
    /// The resource that owns the key, as its routes name it (a voucher id, a queue, a filter,
    /// a page, a user id…); absent for a key its whole kind shares (the voucher registry).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "v1")]
    resource: Option<String>,
    /// The caller namespace the resource lives in (`c:<client id>`, `ip:<address>`): queues,
    /// locks and rate-limit keys of a caller with a clients file, and limiter buckets; absent
    /// in the shared namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    /// What the key holds of its resource (docs/inventory.md "Every kind and its keys").
    #[schema(example = "orders")]
    part: &'static str,
    /// Redis's `TYPE`: `string`, `hash`, `list`, `set`, `zset`, `stream`, or a module's type.
    #[serde(rename = "type")]
    #[schema(example = "stream")]
    value_type: String,
    /// `MEMORY USAGE … SAMPLES 5`: bytes, the key and its value with their overhead, a
    /// collection's estimated from 5 of its elements; null if Redis did not tell.
    #[schema(example = 1840)]
    bytes: Option<u64>,
    /// `PTTL`: milliseconds left; null for a key without expiry.
    #[schema(example = json!(null))]
    ttl_ms: Option<i64>,
}

impl From<Measured> for KeyView {
    fn from(m: Measured) -> Self {
        Self {
            key: m.key,
            kind: m.owner.kind,
            resource: m.owner.resource,
            namespace: m.owner.namespace,
            part: m.owner.part,
            value_type: m.value_type,
            bytes: m.bytes,
            ttl_ms: m.ttl_ms,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct KeysQuery {
    /// Only the keys of this kind; absent: every key under the gateway's prefix.
    #[param(inline, example = "voucher")]
    kind: Option<Kind>,
    /// The `cursor` of the previous page; absent: from the start of the walk.
    cursor: Option<String>,
    /// How much of the keyspace the page examines (`SCAN`'s `COUNT`), 1..=1000 (default
    /// 100). A page holds about that many keys when `kind` is absent, fewer (none, maybe)
    /// with a kind: go on while there is a `cursor`.
    #[param(minimum = 1, maximum = 1000, example = 100)]
    count: Option<u32>,
}

/// A page of the walk.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = InventoryKeysPage)]
struct KeysPage {
    /// The keys this step found, in `SCAN`'s order. A walk may show a key twice (`SCAN` may
    /// return one again while the store grows or shrinks): deduplicate by `key`.
    keys: Vec<KeyView>,
    /// Where the walk goes on: pass it as `cursor`. Absent when the walk is done.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "1792")]
    cursor: Option<String>,
}

/// `cursor_node_gone`: the cursor's Cluster master serves no slots now; start the walk again.
#[allow(dead_code)]
#[derive(Debug, utoipa::IntoResponses)]
#[response(status = 409, content_type = "application/problem+json")]
struct NodeGone(crate::error::Problem);

/// The gateway's keys (admin), one `SCAN` step per page, each with its kind, owner, type,
/// memory and TTL.
///
/// Never `KEYS`: a page is one `SCAN … MATCH … COUNT` on one master and one pipeline of
/// `TYPE`, `MEMORY USAGE … SAMPLES 5` and `PTTL`. On a Cluster one cursor walks every master
/// in turn. A key present from the walk's start to its end is listed at least once; on a
/// Cluster, one whose slot moves between masters meanwhile may be missed or listed twice. An
/// empty inventory on the embedded store, which keeps no keys.
#[utoipa::path(
    get, path = "/v1/admin/keys", operation_id = "inventoryKeys", tag = "inventory",
    security(("admin" = [])),
    params(KeysQuery),
    responses((status = 200, body = KeysPage), StoreErrors, Unauthorized, NodeGone)
)]
async fn keys(
    _: Admin,
    State(state): State<InventoryState>,
    ApiQuery(q): ApiQuery<KeysQuery>,
) -> ApiResult<Json<KeysPage>> {
    let count = bounded("count", q.count, DEFAULT_COUNT, MAX_COUNT)?;
    let from = cursor(q.cursor.as_deref())?;
    let step = state
        .store
        .inventory_scan(from.as_ref(), q.kind, count)
        .await?
        .map_err(refused)?;
    Ok(Json(KeysPage {
        keys: step.keys.into_iter().map(KeyView::from).collect(),
        cursor: step.next.map(|c| c.to_string()),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct BigKeysQuery {
    /// Only the keys of this kind; absent: every key under the gateway's prefix.
    #[param(inline, example = "voucher")]
    kind: Option<Kind>,
    /// How many of the largest to answer, 1..=100 (default 10).
    #[param(minimum = 1, maximum = 100, example = 10)]
    limit: Option<usize>,
    /// The `cursor` of an answer that was not `complete`: examine the keys after those.
    cursor: Option<String>,
}

/// The largest keys found.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = InventoryBigKeys)]
struct BigKeys {
    /// Largest first, by `MEMORY USAGE`.
    keys: Vec<KeyView>,
    /// Whether the walk saw every key (of the kind); false when the budget ran out first.
    #[schema(example = true)]
    complete: bool,
    /// Keys measured (of the kind) by this request.
    #[schema(example = 412)]
    examined: u64,
    /// Where the walk stopped, when not `complete`: pass it as `cursor` to examine the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = json!(null))]
    cursor: Option<String>,
}

/// The largest keys (admin), as `redis-cli --bigkeys` finds them: a `SCAN` walk measuring
/// each key, within a budget.
///
/// One request measures at most 5,000 keys in at most 32 `SCAN` steps of `COUNT` 1000, each
/// step bounded as a page of `/v1/admin/keys` is; `complete` says whether that saw every key,
/// and `cursor` goes on where it stopped. Sizes are `MEMORY USAGE … SAMPLES 5`. Empty on the
/// embedded store.
#[utoipa::path(
    get, path = "/v1/admin/keys/big", operation_id = "inventoryBigKeys", tag = "inventory",
    security(("admin" = [])),
    params(BigKeysQuery),
    responses((status = 200, body = BigKeys), StoreErrors, Unauthorized, NodeGone)
)]
async fn big_keys(
    _: Admin,
    State(state): State<InventoryState>,
    ApiQuery(q): ApiQuery<BigKeysQuery>,
) -> ApiResult<Json<BigKeys>> {
    let limit = bounded("limit", q.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let from = cursor(q.cursor.as_deref())?;
    let big = state
        .store
        .inventory_biggest(from.as_ref(), q.kind, limit)
        .await?
        .map_err(refused)?;
    Ok(Json(BigKeys {
        keys: big.keys.into_iter().map(KeyView::from).collect(),
        complete: big.next.is_none(),
        examined: big.examined,
        cursor: big.next.map(|c| c.to_string()),
    }))
}

/// The query's `name`, `default` when absent: 1..=`max`, else 400.
fn bounded<T>(name: &str, value: Option<T>, default: T, max: T) -> Result<T, ApiError>
where
    T: Copy + PartialOrd + From<u8> + std::fmt::Display,
{
    let value = value.unwrap_or(default);
    if (T::from(1)..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ApiError::invalid(format!(
            "{name} must be within 1..={max}, got {value}"
        )))
    }
}

/// The request's cursor, read (400 when it is none the gateway writes); absent or empty: the
/// start.
fn cursor(text: Option<&str>) -> Result<Option<Cursor>, ApiError> {
    text.filter(|t| !t.is_empty())
        .map(Cursor::parse)
        .transpose()
        .map_err(|e| ApiError::invalid(format!("cursor: {e}")))
}

fn refused(r: Refused) -> ApiError {
    match r {
        Refused::Cursor(why) => ApiError::invalid(format!("cursor: {why}")),
        Refused::NodeGone(node) => ApiError::Conflict {
            code: "cursor_node_gone",
            detail: format!(
                "the cursor's Cluster master {node} serves no slots now (it failed over or left): \
                 start the walk again without a cursor"
            ),
            extra: Some(serde_json::Map::from_iter([(
                "node".to_owned(),
                node.into(),
            )])),
        },
    }
}
