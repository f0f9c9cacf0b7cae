//! Defining, restocking and reading vouchers.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::DateTime;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::not_found;
use super::SeckillState;
use crate::auth::Admin;
use crate::clients::IdempotencyKey;
use crate::error::responses::{JsonBody, Lookup, NotFound, StoreErrors, Unauthorized};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{once_reply, ApiJson, ApiPath, ApiQuery, NoQuery};
use crate::paging::Page;
use crate::seckill::logic::{Listed, Phase};
use crate::seckill::{Idempotency, Put, Restock, SeckillStore, Spec, Voucher, MAX_PER_USER};
use crate::state::AppState;
use crate::types::rfc3339;
use crate::types::{name_rule, Name};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_voucher, get_voucher))
        .routes(routes!(restock))
        .routes(routes!(list_vouchers))
}

/// A voucher's definition.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct VoucherBody {
    /// Units left to sell, 0..=`GATEWAY_SECKILL_MAX_ORDERS` (with what was already sold).
    #[schema(example = 50)]
    stock: u64,
    /// Sale opens at this instant (RFC 3339).
    // The example's window is open-ended, so its voucher is on sale whatever day it is tried.
    #[schema(value_type = String, format = DateTime, example = "2020-01-01T00:00:00Z")]
    begin: String,
    /// Sale closes at this instant (RFC 3339), after `begin`.
    #[schema(value_type = String, format = DateTime, example = "2100-01-01T00:00:00Z")]
    end: String,
    /// Orders one user may hold, 1..=1000 (default 1).
    #[schema(minimum = 1, maximum = 1_000, default = 1, example = 1)]
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
    #[schema(example = "active", value_type = String, pattern = "^(pending|active|ended|sold_out)$")]
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

fn instant(field: &str, s: &str) -> Result<i64, ApiError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.timestamp_millis())
        .map_err(|_| ApiError::invalid(format!("{field} must be an RFC 3339 instant, got {s:?}")))
}

/// Create or replace a voucher (admin).
///
/// `201` when new, `200` when replaced. Replacing sets the stock left, window and per-user
/// limit; what was already sold (`sold`, buyers, orders) stays. `stock + sold` may not exceed
/// `GATEWAY_SECKILL_MAX_ORDERS` (the order stream's cap), else 400.
#[utoipa::path(
    put, path = "/v1/seckill/vouchers/{voucher_id}", operation_id = "seckillPutVoucher",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1")),
    request_body = VoucherBody,
    responses(
        (status = 201, body = VoucherView, description = "Created"),
        (status = 200, body = VoucherView, description = "Replaced"),
        JsonBody, Unauthorized,
    )
)]
async fn put_voucher(
    _: Admin,
    State(state): State<SeckillState>,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<VoucherBody>,
) -> ApiResult<(StatusCode, Json<VoucherView>)> {
    let cap = state.settings.max_orders;
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
    #[schema(minimum = 1, example = 10)]
    quantity: u64,
}

/// Add stock to a voucher atomically (admin).
///
/// `stock + sold` may not exceed `GATEWAY_SECKILL_MAX_ORDERS`, else 400 and nothing changes.
#[utoipa::path(
    post, path = "/v1/seckill/vouchers/{voucher_id}/restock", operation_id = "seckillRestock",
    security(("admin" = [])),
    params(
        ("voucher_id" = String, Path, description = name_rule!(), example = "v1"),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; a retry within 24 h replays the first reply and adds nothing"),
    ),
    request_body = RestockBody,
    responses(
        (status = 200, body = VoucherView),
        JsonBody, Unauthorized, NotFound,
        (status = 422, body = Problem, content_type = "application/problem+json",
            description = "`unprocessable`: the Idempotency-Key was used for another request"),
    )
)]
async fn restock(
    _: Admin,
    State(state): State<SeckillState>,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<RestockBody>,
) -> Result<Response, ApiError> {
    let cap = state.settings.max_orders;
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
    let once = state
        .store
        .seckill_restock(&voucher, body.quantity, cap, idem.as_ref())
        .await?;
    once_reply(once, reply)
}

/// A voucher, with its status by the store's clock.
#[utoipa::path(
    get, path = "/v1/seckill/vouchers/{voucher_id}", operation_id = "seckillGetVoucher",
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1")),
    responses((status = 200, body = VoucherView), Lookup)
)]
async fn get_voucher(
    State(state): State<SeckillState>,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
) -> ApiResult<Json<VoucherView>> {
    let v = state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    Ok(Json(VoucherView::new(&voucher, &v)))
}

/// A page of the voucher listing.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// `upcoming` (status `pending`), `active` (on sale with stock left) or `ended` (`ended`,
    /// or `sold_out`: nothing can be bought now); absent: every voucher.
    #[param(inline, example = "active")]
    status: Option<Phase>,
    /// The `next` of the previous page; absent or empty means from the first voucher.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000, example = 100)]
    limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
struct VoucherPage {
    /// By `begin`, then by id, each as `GET /v1/seckill/vouchers/{voucher_id}` shows it.
    vouchers: Vec<VoucherView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page. Under a
    /// `status` a page may hold fewer than `limit` vouchers, even none, and still go on.
    next: Option<String>,
}

/// Index entries a page under a `status` examines at most, per voucher it may hold: the rest
/// are skipped, and the page ends early with a `next` cursor.
pub(super) const EXAMINED_PER_VOUCHER: usize = 4;

/// The vouchers, by begin then id, paged; each with its stock and its status by the store's
/// clock.
///
/// Read from an index the writes keep (never a scan of the store): a voucher that exists is
/// listed, one that does not is not, also while others are being created. `status` keeps
/// `upcoming` (`pending`), `active` (on sale with stock left) or `ended` (`ended` or
/// `sold_out`) vouchers; such a page examines at most 4 × `limit` vouchers, so it may hold
/// fewer than `limit`, even none, and still give a `next`.
#[utoipa::path(
    get, path = "/v1/seckill/vouchers", operation_id = "seckillListVouchers",
    params(ListQuery),
    responses((status = 200, body = VoucherPage), StoreErrors)
)]
async fn list_vouchers(
    State(state): State<SeckillState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<VoucherPage>> {
    let page = Page::<Listed>::parse(q.after.as_deref(), q.limit)?;
    let examine = match q.status {
        Some(_) => EXAMINED_PER_VOUCHER * page.fetch(),
        None => page.fetch(),
    };
    let found = state
        .store
        .seckill_list(page.after.clone(), q.status, page.fetch(), examine)
        .await?;
    let (vouchers, next) = page.of(found);
    let vouchers = vouchers
        .iter()
        .map(|(at, v)| VoucherView::new(&at.voucher, v))
        .collect();
    Ok(Json(VoucherPage { vouchers, next }))
}
