//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`]; what they share (the listings'
//! page query and cursor, the unknown voucher's 404) in [`common`], published with the order
//! view for the ledger's dead-letter routes, which list orders the same way.

mod common;
mod orders;
mod vouchers;

use utoipa_axum::router::OpenApiRouter;

pub use common::{not_found, PageQuery};
pub use orders::OrderView;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(vouchers::router())
        .merge(orders::router())
}
