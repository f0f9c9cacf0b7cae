//! Buying, and listing a voucher's orders (all of them, paged, or one user's).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{not_found, PageQuery};
use super::SeckillState;
use crate::auth::Acting;
use crate::clients::IdempotencyKey;
use crate::error::responses::{JsonBody, Lookup, NotFound, UserAuth};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{replayed, ApiJson, ApiPath, ApiQuery, NoQuery};
use crate::paging::Page;
use crate::seckill::logic::Seq;
use crate::seckill::{Bought, Idempotency, Order, Refusal, SeckillStore};
use crate::state::AppState;
use crate::types::rfc3339;
use crate::types::{name_rule, Name, UserId};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(buy, list_orders))
        .routes(routes!(user_orders))
}

/// Longest a listing waits for the ledger to say which orders it holds.
const LEDGER_LOOKUP: Duration = Duration::from_millis(500);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct BuyBody {
    /// The buyer, 0..=4294967295.
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64, example = 42)]
    #[serde(deserialize_with = "crate::types::json_user_id")]
    user_id: UserId,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct OrderView {
    /// Unique: `<voucher_id>/<sequence>`, the sequence giving the order of sale.
    #[schema(example = "v1/1763726400123-0")]
    order_id: String,
    voucher_id: String,
    #[schema(value_type = i64, minimum = 0, maximum = 4294967295_i64)]
    user_id: u32,
    /// The store's time of the sale.
    #[schema(value_type = String, format = DateTime)]
    created_at: String,
    /// In listings, when the order ledger is on: whether the order is in PostgreSQL yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    ingested: Option<bool>,
}

impl OrderView {
    pub(crate) fn new(voucher: &Name, seq: Seq, user: UserId) -> Self {
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
async fn mark_ingested(state: &super::Seckill, orders: &mut [OrderView]) {
    if orders.is_empty() {
        return;
    }
    let archive = &state.archive;
    let ids: Vec<String> = orders.iter().map(|o| o.order_id.clone()).collect();
    if let Some(present) = archive
        .holds(&ids, LEDGER_LOOKUP.min(state.store_timeout))
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
/// true`) and buys nothing. The key is the buyer's: the same string sent for another buyer is
/// that buyer's own key (it buys, or is refused, on its own), so no purchase is a 422. A
/// purchase whose outcome the gateway cannot know (the store timed out) is a 503: retry it
/// with the same key.
#[utoipa::path(
    post, path = "/v1/seckill/vouchers/{voucher_id}/orders", operation_id = "seckillBuy",
    params(
        ("voucher_id" = String, Path, description = name_rule!(), example = "v1"),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h"),
    ),
    request_body = BuyBody,
    responses(
        JsonBody, UserAuth, NotFound,
        (status = 201, body = OrderView),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`not_started`, `ended`, `sold_out`, or `already_ordered` (with `order_ids`)"),
    )
)]
async fn buy(
    State(state): State<SeckillState>,
    acting: Acting,
    key: IdempotencyKey,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<BuyBody>,
) -> Result<Response, ApiError> {
    acting.for_user(body.user_id)?;
    let cap = state.settings.max_orders;
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
    get, path = "/v1/seckill/vouchers/{voucher_id}/orders", operation_id = "seckillListOrders",
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1"), PageQuery),
    responses(
        (status = 200, body = OrderPage),
        (status = 401, body = Problem, content_type = "application/problem+json",
            description = "`unauthorized`: end-user JWTs are configured and the admin token is missing or wrong"),
        (status = 403, body = Problem, content_type = "application/problem+json",
            description = "`forbidden`: a user's token; only the admin token lists other users' orders"),
        Lookup,
    )
)]
async fn list_orders(
    State(state): State<SeckillState>,
    acting: Acting,
    ApiPath(voucher): ApiPath<Name>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<OrderPage>> {
    acting.for_all_users()?;
    let page = Page::<Seq>::parse(q.after.as_deref(), q.limit)?;
    let mut orders = state
        .store
        .seckill_orders(&voucher, page.after, page.fetch())
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let next = page.next(&mut orders, false, |o| o.seq);
    let mut orders = views(&voucher, &orders);
    mark_ingested(&state, &mut orders).await;
    Ok(Json(OrderPage { orders, next }))
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
    get, path = "/v1/seckill/vouchers/{voucher_id}/orders/{user_id}", operation_id = "seckillUserOrders",
    params(
        ("voucher_id" = String, Path, description = name_rule!(), example = "v1"),
        ("user_id" = i64, Path, minimum = 0, maximum = 4294967295_i64, description = "User id, 0..=4294967295", example = 42),
    ),
    responses(Lookup, UserAuth, (status = 200, body = UserOrders))
)]
async fn user_orders(
    State(state): State<SeckillState>,
    acting: Acting,
    ApiPath((voucher, user)): ApiPath<(Name, UserId)>,
    _: NoQuery,
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
