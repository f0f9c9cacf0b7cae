//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`], the orders the ledger gave up on
//! in [`dead_letters`]; what they share (the listings' page query and cursor, the unknown
//! voucher's 404) in [`common`].

mod common;
mod dead_letters;
mod orders;
mod vouchers;

use std::time::Duration;

use utoipa_axum::router::OpenApiRouter;

use crate::ledger::Ledger;
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(vouchers::router())
        .merge(orders::router())
        .merge(dead_letters::router())
}

/// What the flash-sale routes are handed (`State<SeckillState>`), made once at start-up.
pub type SeckillState = Slice<Seckill>;

/// The flash-sale routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Seckill {
    store: Store,
    settings: super::Settings,
    store_timeout: Duration,
    /// The order ledger: which orders it holds, and the dead letters it gave up on.
    ledger: Ledger,
}

impl From<&Shared> for Seckill {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.settings.seckill.clone(),
            store_timeout: shared.settings.store_timeout,
            ledger: shared.ledger.clone(),
        }
    }
}
