//! The ledger's admin routes (API.md "Flash sale (seckill)"): a voucher's dead letters, and
//! handing them back to the ledger. Served under the seckill tag, next to the orders.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, SecondsFormat};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::DeadLetter;
use crate::auth::Admin;
use crate::error::responses::{NotFound, StoreErrors, Unauthorized};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::seckill::logic::Seq;
use crate::seckill::SeckillStore;
use crate::state::AppState;
use crate::types::Name;

/// Default and largest page (API.md "Conventions").
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(dead_letters))
        .routes(routes!(replay))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct DeadLettersQuery {
    /// The `next` of the previous page; absent or empty means from the first dead letter.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    limit: Option<usize>,
}

/// The order as it was sold.
#[derive(Debug, Serialize, ToSchema)]
struct DeadOrder {
    #[schema(example = "v1/1763726400123-0")]
    order_id: String,
    voucher_id: String,
    user_id: u32,
    /// The store's time of the sale.
    #[schema(value_type = String, format = DateTime)]
    created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
struct DeadLetterView {
    /// The order's id, `<voucher_id>/<sequence>`.
    #[schema(example = "v1/1763726400123-0")]
    order_id: String,
    /// The order; null when its stream entry could not be read.
    order: Option<DeadOrder>,
    /// Why the ledger gave up, a code for the row's own data: `unique_violation`,
    /// `not_null_violation`, `foreign_key_violation`, `check_violation`,
    /// `exclusion_violation`, `integrity_violation`, `value_too_long`, `numeric_out_of_range`,
    /// `data_exception`, `unreadable_entry` (`unknown` for entries of older versions). The
    /// database being down, read-only or missing a table never dead-letters.
    #[schema(example = "unique_violation")]
    reason: String,
    /// Times the database refused the row.
    attempts: u64,
    /// When the ledger gave up.
    #[schema(value_type = String, format = DateTime)]
    dead_lettered_at: String,
}

impl DeadLetterView {
    fn new(voucher: &Name, d: DeadLetter) -> Self {
        let order_id = format!("{voucher}/{}", d.entry);
        Self {
            order: d.user.map(|user| DeadOrder {
                order_id: order_id.clone(),
                voucher_id: voucher.to_string(),
                user_id: user.0,
                created_at: rfc3339(d.entry.ms),
            }),
            order_id,
            reason: d.reason,
            attempts: d.attempts,
            dead_lettered_at: rfc3339(d.at.ms),
        }
    }
}

fn rfc3339(ms: u64) -> String {
    DateTime::from_timestamp_millis(i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[derive(Debug, Serialize, ToSchema)]
struct DeadLetterPage {
    /// Oldest first.
    dead_letters: Vec<DeadLetterView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page.
    next: Option<String>,
}

/// 404 unless the voucher exists, so both routes answer alike on every backend.
async fn known(state: &AppState, voucher: &Name) -> ApiResult<()> {
    match state.store.voucher(voucher).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::NotFound(format!("no voucher {voucher}"))),
    }
}

/// Orders the ledger gave up on (admin), oldest first, paged.
///
/// Only an error of the order's own row (bad data, a conflicting row) dead-letters it, after
/// 5 refusals. Without the ledger's Redis side (the memory backend) the list is always empty;
/// on Redis without `DATABASE_URL` it still shows what is there.
#[utoipa::path(
    get,
    path = "/v1/seckill/vouchers/{voucher_id}/dead-letters",
    tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = "1-128 of [A-Za-z0-9._:@-]"), DeadLettersQuery),
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
    ApiQuery(q): ApiQuery<DeadLettersQuery>,
) -> ApiResult<Json<DeadLetterPage>> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit must be within 1..={MAX_LIMIT}, got {limit}"
        )));
    }
    let after = q
        .after
        .as_deref()
        .filter(|a| !a.is_empty())
        .map(str::parse::<Seq>)
        .transpose()
        .map_err(|e| ApiError::invalid(format!("after: {e}")))?;
    known(&state, &voucher).await?;
    // One more than asked tells whether another page exists.
    let mut letters = state
        .ledger
        .dead_letters(&voucher, after, limit + 1)
        .await?;
    let next = (letters.len() > limit).then(|| {
        letters.truncate(limit);
        letters.last().map(|d| d.at.to_string())
    });
    Ok(Json(DeadLetterPage {
        dead_letters: letters
            .into_iter()
            .map(|d| DeadLetterView::new(&voucher, d))
            .collect(),
        next: next.flatten(),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
struct Replayed {
    /// Dead letters handed back to the ledger (0 when there were none, or on the memory
    /// backend, which has no ledger).
    replayed: u64,
}

/// Hand every dead letter of a voucher back to the ledger (admin).
///
/// Each order becomes pending again and is ingested by the next round of any gateway instance
/// with `DATABASE_URL`; its dead letter is removed. Safe to repeat and safe with the ledger
/// running: the insert skips an order already there, so an order lands once. Fix the cause
/// first, or it is refused and dead-lettered again after 5 attempts.
#[utoipa::path(
    post,
    path = "/v1/seckill/vouchers/{voucher_id}/dead-letters/replay",
    tag = "seckill",
    security(("admin" = [])),
    params(("voucher_id" = String, Path, description = "1-128 of [A-Za-z0-9._:@-]")),
    responses(
        (status = 200, body = Replayed),
        StoreErrors,
        Unauthorized,
        NotFound,
    )
)]
async fn replay(
    _: Admin,
    State(state): State<AppState>,
    ApiPath(voucher): ApiPath<Name>,
) -> ApiResult<Json<Replayed>> {
    known(&state, &voucher).await?;
    let replayed = state.ledger.replay(&voucher).await?;
    Ok(Json(Replayed { replayed }))
}
