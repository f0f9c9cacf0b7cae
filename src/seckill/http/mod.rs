//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`], the orders the ledger gave up on
//! in [`dead_letters`].

mod dead_letters;
mod orders;
mod vouchers;

use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;

use super::logic::Seq;
use crate::error::ApiError;
use crate::paging::Cursor;
use crate::state::AppState;
use crate::types::Name;

use orders::OrderView;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(vouchers::router())
        .merge(orders::router())
        .merge(dead_letters::router())
}

/// An order id's sequence is the cursor of the order listings (and of the dead-letter
/// listing, whose ids are minted alike); the largest id there can be is refused, since
/// nothing can follow it.
impl Cursor for Seq {
    fn parse_cursor(s: &str) -> Result<Self, String> {
        let seq: Seq = s.parse()?;
        seq.successor()
            .map(|_| seq)
            .ok_or_else(|| "out of range".to_owned())
    }
}

/// A page of a voucher's orders (or of its dead letters, whose ids are orders' ids).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// The `next` of the previous page; absent or empty means from the first order.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    limit: Option<usize>,
}

fn not_found(voucher: &Name) -> ApiError {
    ApiError::NotFound(format!("no voucher {voucher}"))
}
