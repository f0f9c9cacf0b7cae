//! A voucher's dead letters, listed and replayed (docs/api.md "Flash sale (seckill)"): the
//! orders the order archive (the ledger) gave up on, under the voucher's path, shown as the
//! order listings show orders. The archive is the flash sale's `OrderArchive`, which the
//! ledger implements.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::{not_found, PageQuery};
use super::orders::OrderView;
use super::SeckillState;
use crate::auth::Admin;
use crate::error::responses::{Lookup, Unauthorized};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery, NoQuery};
use crate::paging::Page;
use crate::seckill::logic::Seq;
use crate::seckill::{ReplayFailed, SeckillStore};
use crate::state::AppState;
use crate::store::error::StoreError;
use crate::types::rfc3339;
use crate::types::{name_rule, Name};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(dead_letters))
        .routes(routes!(replay_dead_letters))
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
    get, path = "/v1/seckill/vouchers/{voucher_id}/dead-letters", operation_id = "seckillDeadLetters", tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1"), PageQuery),
    responses((status = 200, body = DeadLetterPage), Lookup, Unauthorized)
)]
async fn dead_letters(
    _: Admin,
    State(state): State<SeckillState>,
    ApiPath(voucher): ApiPath<Name>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<DeadLetterPage>> {
    let page = Page::<Seq>::parse(q.after.as_deref(), q.limit)?;
    state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let mut dead = state
        .archive
        .dead_letters(&voucher, page.after, page.fetch())
        .await?;
    let next = page.next(&mut dead, false, |d| d.cursor);
    let dead_letters = dead
        .into_iter()
        .map(|d| DeadLetterView {
            order: d
                .order
                .map(|(seq, user)| OrderView::new(&voucher, seq, user)),
            reason: d.reason,
            attempts: d.attempts,
            dead_lettered_at: rfc3339(i64::try_from(d.cursor.ms).unwrap_or(i64::MAX)),
        })
        .collect();
    Ok(Json(DeadLetterPage { dead_letters, next }))
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
    post, path = "/v1/seckill/vouchers/{voucher_id}/dead-letters/replay", operation_id = "seckillReplayDeadLetters", tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1")),
    responses((status = 200, body = ReplayReply), Lookup, Unauthorized)
)]
async fn replay_dead_letters(
    _: Admin,
    State(state): State<SeckillState>,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
) -> ApiResult<Json<ReplayReply>> {
    state
        .store
        .seckill_voucher(&voucher)
        .await?
        .ok_or_else(|| not_found(&voucher))?;
    let replayed = state.archive.replay(&voucher).await.map_err(|e| match e {
        ReplayFailed::Store(e) => ApiError::from(e),
        ReplayFailed::Unavailable(reason) => ApiError::BackendUnavailable(StoreError::Unavailable(
            format!("ledger database: {reason}"),
        )),
    })?;
    Ok(Json(ReplayReply { replayed }))
}
