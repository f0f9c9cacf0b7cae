//! Flash sales: voucher stock in a hash and one atomic purchase (a Lua script on Redis, a
//! per-voucher lock in memory); orders in a capped stream, listed in sale order.
//!
//! `stock` is what is left to sell and `sold` what has been sold; `stock + sold` never exceeds
//! `GATEWAY_SECKILL_MAX_ORDERS` (`Settings::max_orders`), the cap of the order stream, so no
//! order is ever trimmed away. Replacing a voucher (PUT on an existing one) sets its stock left,
//! window and per-user limit but keeps what was sold: `sold`, the buyers and their orders stay.

mod http;
pub mod logic;
mod memory;
mod redis;
mod settings;

pub use http::{Domain, SeckillState};
pub use settings::{Flags, Settings};

use crate::store::error::StoreError;
use crate::types::{Name, UserId};
use logic::{Listed, Phase, Seq};

pub use crate::store::channels::{Heard, Listening};

/// Where sold orders are kept beyond the store (the order ledger, when it is on): the order
/// listings ask it which of their orders it holds yet, and a voucher's dead-letter routes list
/// and replay the orders it gave up on. The flash sale publishes this and the ledger implements
/// it, so the ledger builds on the flash sale and never the other way round, and every route
/// under a voucher's path is the flash sale's.
pub trait OrderArchive: Send + Sync + std::fmt::Debug {
    /// Which of `order_ids` it holds; `None` when it is off or cannot answer within `within`
    /// (listings then leave the flag out).
    fn holds<'a>(
        &'a self,
        order_ids: &'a [String],
        within: std::time::Duration,
    ) -> futures::future::BoxFuture<'a, Option<std::collections::HashSet<String>>>;

    /// Up to `limit` orders of `voucher` it gave up on, after the cursor `after`, oldest first.
    fn dead_letters<'a>(
        &'a self,
        voucher: &'a Name,
        after: Option<Seq>,
        limit: usize,
    ) -> futures::future::BoxFuture<'a, Result<Vec<DeadOrder>, StoreError>>;

    /// Hands every dead letter of `voucher` back (each order lands once): how many.
    fn replay<'a>(
        &'a self,
        voucher: &'a Name,
    ) -> futures::future::BoxFuture<'a, Result<u64, ReplayFailed>>;
}

/// An order the archive gave up on.
#[derive(Debug, Clone)]
pub struct DeadOrder {
    /// Its place in the dead letters (the listing's cursor; its time is when it was given up).
    pub cursor: Seq,
    /// The order's sequence and buyer; `None` when its entry could not be read.
    pub order: Option<(Seq, UserId)>,
    /// The reason code (`unique_violation`, `unreadable_entry`, …).
    pub reason: String,
    /// Times it was refused (`None` in dead letters of older versions).
    pub attempts: Option<u64>,
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFailed {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The archive as a whole cannot take orders now (reason code): nothing is lost.
    #[error("the order archive cannot take orders now ({0})")]
    Unavailable(&'static str),
}

/// Largest `per_user_limit`: bounds what a per-user listing and the already-ordered refusal carry.
pub const MAX_PER_USER: u32 = 1000;

/// A voucher as an admin defines it (times are unix milliseconds).
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Stock left to sell.
    pub stock: u64,
    pub begin_ms: i64,
    /// Always after `begin_ms`.
    pub end_ms: i64,
    /// 1..=[`MAX_PER_USER`].
    pub per_user_limit: u32,
}

/// A voucher's state as its writes publish it: `<stock> <sold> <begin> <end>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    pub stock: u64,
    pub sold: u64,
    pub begin_ms: i64,
    pub end_ms: i64,
}

impl Changed {
    /// The message a write publishes.
    pub fn message(&self) -> String {
        format!(
            "{} {} {} {}",
            self.stock, self.sold, self.begin_ms, self.end_ms
        )
    }

    /// Reads a message; `None` when it is not one.
    pub fn read(message: &str) -> Option<Self> {
        let mut parts = message.split(' ');
        let mut next = || parts.next();
        Some(Self {
            stock: next()?.parse().ok()?,
            sold: next()?.parse().ok()?,
            begin_ms: next()?.parse().ok()?,
            end_ms: next()?.parse().ok()?,
        })
    }
}

/// A voucher as the store holds it, with the store's clock when it was read.
#[derive(Debug, Clone, Copy)]
pub struct Voucher {
    pub stock: u64,
    pub sold: u64,
    pub begin_ms: i64,
    pub end_ms: i64,
    pub per_user_limit: u32,
    /// The store's time of the read, so status agrees with what a purchase would see.
    pub now_ms: i64,
}

impl Voucher {
    pub fn status(&self) -> logic::Status {
        logic::Status::at(self.now_ms, self.begin_ms, self.end_ms, self.stock)
    }
}

/// One sold order; its id is `<voucher_id>/<seq>` and its time is `seq.ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub seq: Seq,
    pub user: UserId,
}

/// Why a purchase was refused. Each is a distinct answer of the store, never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    NotFound,
    NotStarted,
    Ended,
    SoldOut,
    /// The user holds `per_user_limit` orders already: these.
    AlreadyOrdered(Vec<Seq>),
}

pub use crate::types::{Idempotency, Once, IDEMPOTENCY_SECS};

/// What a purchase came to: a sale or a refusal, done now or replayed.
pub type Bought = Once<Result<Order, Refusal>>;

/// What a create-or-replace did.
#[derive(Debug, Clone, Copy)]
pub enum Put {
    Created(Voucher),
    Replaced(Voucher),
    /// `stock + sold` would pass the cap; nothing changed.
    OverCap {
        sold: u64,
    },
}

/// What a restock did.
#[derive(Debug, Clone, Copy)]
pub enum Restock {
    Done(Voucher),
    NotFound,
    /// `stock + sold + quantity` would pass the cap; nothing changed.
    OverCap {
        stock: u64,
        sold: u64,
    },
}

/// A page of the voucher listing, as the store read it.
pub type Vouchers = crate::types::Listing<Listed, Voucher>;

crate::store::store_trait! {
    /// What a flash-sale backend must do. Every method is one atomic store operation; `cap` is
    /// `Settings::max_orders` (`GATEWAY_SECKILL_MAX_ORDERS`).
    pub(crate) trait SeckillStore {
        /// Creates `voucher` or replaces its stock left, window and limit (keeping what was sold).
        async fn seckill_put(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> = "seckill.put_voucher";
        /// Adds `quantity` to the stock left. Under `idem`, like [`Self::seckill_buy`].
        async fn seckill_restock(
            &self,
            voucher: &Name,
            quantity: u64,
            cap: u64,
            idem: Option<&Idempotency>,
        ) -> Result<Once<Restock>, StoreError> = "seckill.restock";
        /// The voucher, or `None` when unknown.
        async fn seckill_voucher(&self, voucher: &Name) -> Result<Option<Voucher>, StoreError> = "seckill.voucher";
        /// Up to `limit` vouchers after `after` in listing order (`begin`, then id) whose status
        /// `phase` holds (every one when `None`), examining at most `examine` entries of the
        /// index the writes keep: never one that does not exist, never one missed.
        async fn seckill_list(&self, after: Option<Listed>, phase: Option<Phase>, limit: usize, examine: usize)
            -> Result<Vouchers, StoreError> = "seckill.list";
        /// Window, stock and per-user checks, then the sale, as one step. Under `idem`, the same
        /// step first looks for the key's earlier outcome and records this one (kept
        /// [`IDEMPOTENCY_SECS`]; not for an unknown voucher, where nothing happened), so "it
        /// happened" and "its reply is recorded" never disagree.
        async fn seckill_buy(
            &self,
            voucher: &Name,
            user: UserId,
            cap: u64,
            idem: Option<&Idempotency>,
        ) -> Result<Bought, StoreError> = "seckill.buy";
        /// Up to `limit` orders after `after`, in sale order; `None` when the voucher is unknown.
        async fn seckill_orders(&self, voucher: &Name, after: Option<Seq>, limit: usize)
            -> Result<Option<Vec<Order>>, StoreError> = "seckill.orders";
        /// The ids of `user`'s orders, oldest first; `None` when the voucher is unknown.
        async fn seckill_user_orders(&self, voucher: &Name, user: UserId)
            -> Result<Option<Vec<Seq>>, StoreError> = "seckill.user_orders";
        /// Listens to `voucher`'s changes: each write that changes its state (a purchase run, a
        /// restock, a put) publishes it once ([`Changed`]). One subscription per voucher per
        /// process, however many listen.
        async fn seckill_listen(&self, voucher: &Name) -> Result<Listening, StoreError> = _;
    }
}
