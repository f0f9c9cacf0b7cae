//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`], the orders the ledger gave up on
//! in [`dead_letters`].

mod dead_letters;
mod orders;
mod vouchers;

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

fn not_found(voucher: &Name) -> ApiError {
    ApiError::NotFound(format!("no voucher {voucher}"))
}
