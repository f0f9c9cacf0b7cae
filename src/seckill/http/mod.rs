//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`], the orders the ledger gave up on
//! in [`dead_letters`]; what they share (the listings' page query and cursor, the unknown
//! voucher's 404) in [`common`].

mod common;
mod dead_letters;
mod orders;
mod vouchers;

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(vouchers::router())
        .merge(orders::router())
        .merge(dead_letters::router())
}
