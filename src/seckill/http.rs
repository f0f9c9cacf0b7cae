//! Flash-sale routes (docs/api.md "Flash sale (seckill)").

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, SecondsFormat};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::logic::Seq;
use super::{
    Bought, Idempotency, Once, Order, Put, Refusal, Restock, SeckillStore, Spec, Voucher,
    MAX_PER_USER,
};
use crate::auth::Acting;
use crate::auth::Admin;
use crate::error::responses::{NotFound, NotJson, StoreErrors, TooLarge, Unauthorized, UserAuth};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{replayed, ApiJson, ApiPath, ApiQuery, IdempotencyKey};
use crate::ledger::{Ledger, ReplayError};
use crate::state::AppState;
use crate::types::{name_rule, Name, UserId};

/// Longest a listing waits for the ledger to say which orders it holds.
const LEDGER_LOOKUP: Duration = Duration::from_millis(500);
/// Default and largest page of an order listing (docs/api.md "Conventions").
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_voucher, get_voucher))
        .routes(routes!(restock))
        .routes(routes!(buy, list_orders))
        .routes(routes!(user_orders))
        .routes(routes!(dead_letters))
        .routes(routes!(replay_dead_letters))
}

/// A voucher's definition.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct VoucherBody {
    /// Units left to sell, 0..=`GATEWAY_SECKILL_MAX_ORDERS` (with what was already sold).
    #[schema(example = 50)]
    stock: u64,
    /// Sale opens at this instant (RFC 3339).
    #[schema(value_type = String, format = DateTime, example = "2026-11-21T12:00:00Z")]
    begin: String,
    /// Sale closes at this instant (RFC 3339), after `begin`.
    #[schema(value_type = String, format = DateTime, example = "2026-11-21T13:00:00Z")]
    end: String,
    /// Orders one user may hold, 1..=1000 (default 1).
    #[schema(example = 1)]
    per_user_limit: Option<u32>,
}

#[derive(Debug, Serialize, ToSchema)]
struct VoucherView {
    voucher_id: String,
    /// Units left to sell.
    stock: u64,
    /// Units sold.
    sold: u64,
    #[schema(value_type = String, format = DateTime)]
    begin: String,
    #[schema(value_type = String, format = DateTime)]
    end: String,
    per_user_limit: u32,
    /// By the store's clock: `pending` before `begin`, `ended` from `end` on, else `sold_out`
    /// when no stock is left, else `active`.
    #[schema(example = "active")]
    status: &'static str,
}

impl VoucherView {
    fn new(voucher: &Name, v: &Voucher) -> Self {
        Self {
            voucher_id: voucher.to_string(),
            stock: v.stock,
            sold: v.sold,
            begin: rfc3339(v.begin_ms),
            end: rfc3339(v.end_ms),
            per_user_limit: v.per_user_limit,
            status: v.status().as_str(),
        }
    }
}

fn rfc3339(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn instant(field: &str, s: &str) -> Result<i64, ApiError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.timestamp_millis())
        .map_err(|_| ApiError::invalid(format!("{field} must be an RFC 3339 instant, got {s:?}")))
}

fn not_found(voucher: &Name) -> ApiError {
    ApiError::NotFound(format!("no voucher {voucher}"))
}

/// Create or replace a voucher (admin).
///
/// `201` when new, `200` when replaced. Replacing sets the stock left, window and per-user
/// limit; what was already sold (`sold`, buyers, orders) stays. `stock + sold` may not exceed
/// `GATEWAY_SECKILL_MAX_ORDERS` (the order stream's cap), else 400.
#[utoipa::path(
    put,
    path = "/v1/seckill/vouchers/{voucher_id}",
    operation_id = "seckillPutVoucher",
    tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!())),
    request_body = VoucherBody,
    responses(
        (status = 201, body = VoucherView, description = "Created"),
        (status = 200, body = VoucherView, description = "Replaced"),
        StoreErrors,
        Unauthorized,
        TooLarge,
        NotJson,
    )
)]
async fn put_voucher(
    _: Admin,
    State(state): State<AppState>,
    ApiPath(voucher): ApiPath<Name>,
    ApiJson(body): ApiJson<VoucherBody>,
) -> ApiResult<(StatusCode, Json<VoucherView>)> {
    let cap = state.settings.seckill_max_orders;
    let begin_ms = instant("begin", &body.begin)?;
    let end_ms = instant("end", &body.end)?;
    if end_ms <= begin_ms {
        return Err(ApiError::invalid("end must be after begin"));
    }
    if body.stock > cap {
        return Err(ApiError::invalid(format!(
            "stock may be at most {cap} (GATEWAY_SECKILL_MAX_ORDERS), got {}",
            body.stock
        )));
    }
    let per_user_limit = body.per_user_limit.unwrap_or(1);
    if !(1..=MAX_PER_USER).contains(&per_user_limit) {
        return Err(ApiError::invalid(format!(
            "per_user_limit must be within 1..={MAX_PER_USER}, got {per_user_limit}"
        )));
    }
    let spec = Spec {
        stock: body.stock,
        begin_ms,
        end_ms,
        per_user_limit,
    };
    match state.store.seckill_put(&voucher, spec, cap).await? {
        Put::Created(v) => Ok((StatusCode::CREATED, Json(VoucherView::new(&voucher, &v)))),
        Put::Replaced(v) => Ok((StatusCode::OK, Json(VoucherView::new(&voucher, &v)))),
        Put::OverCap { sold } => Err(ApiError::invalid(format!(
            "{sold} already sold: stock may be at most {} (GATEWAY_SECKILL_MAX_ORDERS {cap})",
            cap.saturating_sub(sold)
        ))),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RestockBody {
    /// Units to add, at least 1.
    #[schema(example = 10)]
    quantity: u64,
}

/// Add stock to a voucher atomically (admin).
///
/// `stock + sold` may not exceed `GATEWAY_SECKILL_MAX_ORDERS`, else 400 and nothing changes.
#[utoipa::path(
    post,
    path = "/v1/seckill/vouchers/{voucher_id}/restock",
    operation_id = "seckillRestock",
    tag = "seckill",
    security(("admin" = [])),
    params(
        ("voucher_id" = String, Path, description = name_rule!()),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; a retry within 24 h replays the first reply and adds nothing"),
    ),
    request_body = RestockBody,
    responses(
        (status = 200, body = VoucherView),
        StoreErrors,
        Unauthorized,
        NotFound,
        TooLarge,
        NotJson,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another request"),
    )
)]
async fn restock(
    _: Admin,
    State(state): State<AppState>,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(voucher): ApiPath<Name>,
    ApiJson(body): ApiJson<RestockBody>,
) -> Result<Response, ApiError> {
    let cap = state.settings.seckill_max_orders;
    if body.quantity == 0 || body.quantity > cap {
        return Err(ApiError::invalid(format!(
            "quantity must be within 1..={cap}, got {}",
            body.quantity
        )));
    }
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: format!("restock|{}", body.quantity),
    });
    let reply = |outcome: Restock| {
        match outcome {
        Restock::Done(v) => Json(VoucherView::new(&voucher, &v)).into_response(),
        Restock::NotFound => not_found(&voucher).into_response(),
        Restock::OverCap { stock, sold } => ApiError::invalid(format!(
            "stock {stock} + sold {sold} + quantity {} would exceed GATEWAY_SECKILL_MAX_ORDERS {cap}",
            body.quantity
        ))
        .into_response(),
    }
    };
    match state
        .store
        .seckill_restock(&voucher, body.quantity, cap, idem.as_ref())
        .await?
    {
        Once::Now(outcome) => Ok(reply(outcome)),
        Once::Replayed(outcome) => Ok(replayed(reply(outcome))),
        Once::KeyReused => Err(ApiError::Unprocessable(
            "this Idempotency-Key was used for a different request".to_owned(),
        )),
    }
}

/// A voucher, with its status by the store's clock.
#[utoipa::path(
    get,
    path = "/v1/seckill/vouchers/{voucher_id}",
    operation_id = "seckillGetVoucher",
    tag = "seckill",
    params(("voucher_id" = String, Path, description = name_rule!())),
    responses(
        (status = 200, body = VoucherView),
        StoreErrors,
        NotFound,
    )
)]
async fn get_voucher(
    State(state): State<AppState>,
    ApiPath(voucher): ApiPath<Name>,
) -> ApiResult<Json<VoucherView>> {
    let v = state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    Ok(Json(VoucherView::new(&voucher, &v)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct BuyBody {
    /// The buyer, 0..=4294967295.
    #[schema(value_type = u32, example = 42)]
    #[serde(deserialize_with = "crate::types::json_user_id")]
    user_id: UserId,
}

#[derive(Debug, Serialize, ToSchema)]
struct OrderView {
    /// Unique: `<voucher_id>/<sequence>`, the sequence giving the order of sale.
    #[schema(example = "v1/1763726400123-0")]
    order_id: String,
    voucher_id: String,
    user_id: u32,
    /// The store's time of the sale.
    #[schema(value_type = String, format = DateTime)]
    created_at: String,
    /// In listings, when the order ledger is on: whether the order is in PostgreSQL yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    ingested: Option<bool>,
}

impl OrderView {
    fn new(voucher: &Name, seq: Seq, user: UserId) -> Self {
        Self {
            order_id: format!("{voucher}/{seq}"),
            voucher_id: voucher.to_string(),
            user_id: user.0,
            created_at: rfc3339(i64::try_from(seq.ms).unwrap_or(i64::MAX)),
            ingested: None,
        }
    }
}

/// Marks each order ingested or not, when the ledger is on and answers.
async fn mark_ingested(state: &AppState, orders: &mut [OrderView]) {
    if orders.is_empty() {
        return;
    }
    let ids: Vec<String> = orders.iter().map(|o| o.order_id.clone()).collect();
    if let Some(present) = state
        .ledger
        .ingested(&ids, LEDGER_LOOKUP.min(state.settings.store_timeout))
        .await
    {
        for o in orders {
            o.ingested = Some(present.contains(&o.order_id));
        }
    }
}

/// Buy one unit.
///
/// One atomic step in the store: the voucher exists, its window is open (store clock), stock
/// is left and the user holds fewer than `per_user_limit` orders; then stock goes down and the
/// order is recorded. Refusals: 404 `not_found`, 409 `not_started`, `ended`, `sold_out`, or
/// `already_ordered` with the user's `order_ids`.
///
/// Retries are safe with an `Idempotency-Key`: a repeat with the same key and the same buyer
/// within 24 h gets the first reply again (same status and body, plus `Idempotency-Replayed:
/// true`) and buys nothing; the same key for another buyer is 422. A purchase whose outcome
/// the gateway cannot know (the store timed out) is a 503: retry it with the same key.
#[utoipa::path(
    post,
    path = "/v1/seckill/vouchers/{voucher_id}/orders",
    operation_id = "seckillBuy",
    tag = "seckill",
    params(
        ("voucher_id" = String, Path, description = name_rule!()),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h"),
    ),
    request_body = BuyBody,
    responses(
        UserAuth,
        (status = 201, body = OrderView),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`not_started`, `ended`, `sold_out`, or `already_ordered` (with `order_ids`)"),
        StoreErrors,
        NotFound,
        TooLarge,
        NotJson,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another buyer"),
    )
)]
async fn buy(
    State(state): State<AppState>,
    acting: Acting,
    key: IdempotencyKey,
    ApiPath(voucher): ApiPath<Name>,
    ApiJson(body): ApiJson<BuyBody>,
) -> Result<Response, ApiError> {
    acting.for_user(body.user_id)?;
    let cap = state.settings.seckill_max_orders;
    let IdempotencyKey(key) = key.for_user(body.user_id.0);
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: format!("buy|{}", body.user_id),
    });
    let reply = |outcome: Result<Order, Refusal>| match outcome {
        Ok(order) => (
            StatusCode::CREATED,
            Json(OrderView::new(&voucher, order.seq, order.user)),
        )
            .into_response(),
        Err(refusal) => refused(&voucher, body.user_id, refusal).into_response(),
    };
    Ok(
        match state
            .store
            .seckill_buy(&voucher, body.user_id, cap, idem.as_ref())
            .await?
        {
            Bought::Now(outcome) => reply(outcome),
            Bought::Replayed(outcome) => replayed(reply(outcome)),
            Bought::KeyReused => {
                return Err(ApiError::Unprocessable(
                    "this Idempotency-Key was used for a different request".to_owned(),
                ))
            }
        },
    )
}

fn refused(voucher: &Name, user: UserId, refusal: Refusal) -> ApiError {
    let conflict = |code, detail: String| ApiError::Conflict {
        code,
        detail,
        extra: None,
    };
    match refusal {
        Refusal::NotFound => not_found(voucher),
        Refusal::NotStarted => conflict(
            "not_started",
            format!("voucher {voucher} is not on sale yet"),
        ),
        Refusal::Ended => conflict("ended", format!("the sale of voucher {voucher} has ended")),
        Refusal::SoldOut => conflict("sold_out", format!("voucher {voucher} is sold out")),
        Refusal::AlreadyOrdered(seqs) => {
            let ids = seqs
                .iter()
                .map(|s| serde_json::Value::from(format!("{voucher}/{s}")))
                .collect();
            let mut extra = serde_json::Map::new();
            extra.insert("order_ids".to_owned(), serde_json::Value::Array(ids));
            ApiError::Conflict {
                code: "already_ordered",
                detail: format!(
                    "user {user} already holds the most orders of voucher {voucher} allowed"
                ),
                extra: Some(extra),
            }
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct OrdersQuery {
    /// The `next` of the previous page; absent or empty means from the first order.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
struct OrderPage {
    /// In order of sale.
    orders: Vec<OrderView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page.
    next: Option<String>,
}

/// A voucher's orders in order of sale, paged.
///
/// Every buyer's `user_id` is in it, so with end-user JWTs configured only the admin token may
/// list them (`401` without it, `403` with a user's token; a user reads their own orders at
/// `.../orders/{user_id}`). Without JWT settings it is open, like every user route then.
#[utoipa::path(
    get,
    path = "/v1/seckill/vouchers/{voucher_id}/orders",
    operation_id = "seckillListOrders",
    tag = "seckill",
    params(("voucher_id" = String, Path, description = name_rule!()), OrdersQuery),
    responses(
        (status = 200, body = OrderPage),
        (status = 401, body = Problem, content_type = "application/problem+json",
            description = "`unauthorized`: end-user JWTs are configured and the admin token is missing or wrong"),
        (status = 403, body = Problem, content_type = "application/problem+json",
            description = "`forbidden`: a user's token; only the admin token lists other users' orders"),
        StoreErrors,
        NotFound,
    )
)]
async fn list_orders(
    State(state): State<AppState>,
    acting: Acting,
    ApiPath(voucher): ApiPath<Name>,
    ApiQuery(q): ApiQuery<OrdersQuery>,
) -> ApiResult<Json<OrderPage>> {
    acting.for_all_users()?;
    let (limit, after) = q.page()?;
    // One more than asked tells whether another page exists.
    let mut orders = state
        .store
        .seckill_orders(&voucher, after, limit + 1)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let next = (orders.len() > limit).then(|| {
        orders.truncate(limit);
        orders.last().map(|o| o.seq.to_string())
    });
    let mut orders = views(&voucher, &orders);
    mark_ingested(&state, &mut orders).await;
    Ok(Json(OrderPage {
        orders,
        next: next.flatten(),
    }))
}

impl OrdersQuery {
    /// The page size and the cursor, both checked (a cursor naming the largest id there can
    /// be is out of range: nothing can follow it).
    fn page(&self) -> Result<(usize, Option<Seq>), ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::invalid(format!(
                "limit must be within 1..={MAX_LIMIT}, got {limit}"
            )));
        }
        let after = self
            .after
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(str::parse::<Seq>)
            .transpose()
            .map_err(|e| ApiError::invalid(format!("after: {e}")))?;
        if after.is_some_and(|a| a.successor().is_none()) {
            return Err(ApiError::invalid("after: out of range"));
        }
        Ok((limit, after))
    }
}

/// One order the ledger gave up on.
#[derive(Debug, Serialize, ToSchema)]
struct DeadLetterView {
    /// The order as sold (absent fields when the stream entry could not be read).
    #[serde(flatten)]
    order: Option<OrderView>,
    /// Why the ledger gave up: `unique_violation`, `data_exception`, `unreadable_entry`, …
    #[schema(example = "unique_violation")]
    reason: String,
    /// Times the database refused the order's row (absent in dead letters of older versions).
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u64>,
    /// When the ledger gave up on it.
    #[schema(value_type = String, format = DateTime)]
    dead_lettered_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
struct DeadLetterPage {
    /// Oldest first.
    dead_letters: Vec<DeadLetterView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page.
    next: Option<String>,
}

/// Orders the ledger gave up on (admin), paged, each with its reason code.
///
/// Only an order the database refused for its own data ends here (a duplicate, a bad value);
/// fix the cause, then replay them. Always empty on the memory backend (no ledger).
#[utoipa::path(
    get,
    path = "/v1/seckill/vouchers/{voucher_id}/dead-letters",
    operation_id = "seckillDeadLetters",
    tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!()), OrdersQuery),
    responses(
        (status = 200, body = DeadLetterPage),
        StoreErrors,
        Unauthorized,
        NotFound,
    )
)]
async fn dead_letters(
    _: Admin,
    State(state): State<AppState>,
    ApiPath(voucher): ApiPath<Name>,
    ApiQuery(q): ApiQuery<OrdersQuery>,
) -> ApiResult<Json<DeadLetterPage>> {
    let (limit, after) = q.page()?;
    state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let mut dead = Ledger::dead_letters(&state.store, &voucher, after, limit + 1).await?;
    let next = (dead.len() > limit).then(|| {
        dead.truncate(limit);
        dead.last().map(|d| d.dead_id.to_string())
    });
    let dead_letters = dead
        .into_iter()
        .map(|d| DeadLetterView {
            order: d.order.map(|row| {
                let seq = row
                    .order_id
                    .rsplit('/')
                    .next()
                    .and_then(|s| s.parse::<Seq>().ok())
                    .unwrap_or(Seq {
                        ms: row.created_at_ms,
                        n: 0,
                    });
                OrderView::new(&voucher, seq, row.user)
            }),
            reason: d.reason,
            attempts: d.attempts,
            dead_lettered_at: rfc3339(i64::try_from(d.dead_id.ms).unwrap_or(i64::MAX)),
        })
        .collect();
    Ok(Json(DeadLetterPage {
        dead_letters,
        next: next.flatten(),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
struct ReplayReply {
    /// Dead letters handed back to the ledger (each order lands once).
    replayed: u64,
}

/// Hand every dead letter of a voucher back to the ledger (admin).
///
/// Each order is inserted (a no-op when it is there already, so it lands once) and its dead
/// letter removed; one the database still refuses stays. 0 while the ledger is off; 503 when
/// the database as a whole cannot take orders (nothing is lost: replay again later).
#[utoipa::path(
    post,
    path = "/v1/seckill/vouchers/{voucher_id}/dead-letters/replay",
    operation_id = "seckillReplayDeadLetters",
    tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!())),
    responses(
        (status = 200, body = ReplayReply),
        StoreErrors,
        Unauthorized,
        NotFound,
    )
)]
async fn replay_dead_letters(
    _: Admin,
    State(state): State<AppState>,
    ApiPath(voucher): ApiPath<Name>,
) -> ApiResult<Json<ReplayReply>> {
    state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let replayed = state
        .ledger
        .replay(&state.store, &voucher)
        .await
        .map_err(|e| match e {
            ReplayError::Store(e) => ApiError::from(e),
            ReplayError::Database(reason) => ApiError::BackendUnavailable(
                crate::store::error::StoreError::Unavailable(format!("ledger database: {reason}")),
            ),
        })?;
    Ok(Json(ReplayReply { replayed }))
}

fn views(voucher: &Name, orders: &[Order]) -> Vec<OrderView> {
    orders
        .iter()
        .map(|o| OrderView::new(voucher, o.seq, o.user))
        .collect()
}

#[derive(Debug, Serialize, ToSchema)]
struct UserOrders {
    /// Oldest first; at most the voucher's `per_user_limit`.
    orders: Vec<OrderView>,
}

/// One user's orders of a voucher (`{"orders": []}` when none).
#[utoipa::path(
    get,
    path = "/v1/seckill/vouchers/{voucher_id}/orders/{user_id}",
    operation_id = "seckillUserOrders",
    tag = "seckill",
    params(
        ("voucher_id" = String, Path, description = name_rule!()),
        ("user_id" = u32, Path, description = "User id, 0..=4294967295"),
    ),
    responses(
        UserAuth,
        (status = 200, body = UserOrders),
        StoreErrors,
        NotFound,
    )
)]
async fn user_orders(
    State(state): State<AppState>,
    acting: Acting,
    ApiPath((voucher, user)): ApiPath<(Name, UserId)>,
) -> ApiResult<Json<UserOrders>> {
    acting.for_user(user)?;
    let seqs = state
        .store
        .seckill_user_orders(&voucher, user)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let mut orders: Vec<OrderView> = seqs
        .into_iter()
        .map(|seq| OrderView::new(&voucher, seq, user))
        .collect();
    mark_ingested(&state, &mut orders).await;
    Ok(Json(UserOrders { orders }))
}
