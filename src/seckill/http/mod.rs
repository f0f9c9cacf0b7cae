//! Flash-sale routes (docs/api.md "Flash sale (seckill)"): vouchers (define, restock, read) in
//! [`vouchers`], purchases and order listings in [`orders`], the orders the archive gave up on
//! in [`dead_letters`], a voucher's live events in [`events`]; what they share (the listings' page query and cursor, the unknown
//! voucher's 404) in [`common`].

mod common;
mod dead_letters;
mod events;
mod orders;
mod vouchers;

use std::sync::Arc;
use std::time::Duration;

use utoipa_axum::router::OpenApiRouter;

use crate::middleware::costs::{Query, RouteTerms, Rule};
use crate::seckill::OrderArchive;
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> =
        Some(("seckill", "Flash sales: atomic stock and orders"));
    const TERMS: &'static [RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
            .merge(vouchers::router())
            .merge(orders::router())
            .merge(dead_letters::router())
            .merge(events::router())
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<SeckillState>()
    }
}

/// What these routes cost the global limiter beyond 1 (docs/ratelimit.md "Route costs").
pub const TERMS: &[RouteTerms] = &[
    // A listing reads each voucher it examines (one small script each): a page under a
    // `status` examines up to 4 per voucher it may hold.
    RouteTerms::new(
        "GET",
        "/v1/seckill/vouchers",
        Rule::Query(list_cost),
        "1 + limit / 100; with a status, 1 + 4 × limit / 100",
    ),
];

fn list_cost(q: &Query<'_>) -> u64 {
    let per = match q.get("status") {
        Some(_) => vouchers::EXAMINED_PER_VOUCHER as u64,
        None => 1,
    };
    1 + per * q.page_limit() / 100
}

/// What the flash-sale routes are handed (`State<SeckillState>`), made once at start-up.
pub type SeckillState = Slice<Seckill>;

/// The flash-sale routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Seckill {
    store: Store,
    settings: super::Settings,
    store_timeout: Duration,
    /// Where orders are kept beyond the store (the order ledger): which of them it holds, and
    /// the ones it gave up on.
    archive: Arc<dyn OrderArchive>,
    /// The event streams of this process (their cap, heartbeat and end) and the vouchers'
    /// feeds behind them.
    streams: Arc<crate::streams::Streams>,
    feeds: events::VoucherFeeds,
}

impl From<&Shared> for Seckill {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::seckill::Settings>().clone(),
            store_timeout: shared.settings.store_timeout,
            archive: shared.part::<Arc<dyn OrderArchive>>().clone(),
            streams: shared.part::<Arc<crate::streams::Streams>>().clone(),
            feeds: Arc::new(crate::streams::Feeds::new(
                events::Vouchers {
                    store: shared.store.clone(),
                    clock: shared.settings.clock.clone(),
                },
                shared.settings.clock.clone(),
            )),
        }
    }
}
