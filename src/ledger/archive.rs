//! The ledger as the flash sale's `OrderArchive`: which orders PostgreSQL holds, and the
//! orders the ledger gave up on, listed and replayed through the store it drains.

use std::collections::HashSet;
use std::time::Duration;

use super::{dead_letters, Ledger, LedgerStore, ReplayError};
use crate::seckill::logic::Seq;
use crate::seckill::{DeadOrder, ReplayFailed};
use crate::store::error::StoreError;
use crate::types::Name;

/// The ledger and the store its dead letters are in.
#[derive(Debug)]
pub(crate) struct Archive<S> {
    ledger: Ledger,
    store: S,
}

impl<S> Archive<S> {
    pub(crate) fn new(ledger: Ledger, store: S) -> Self {
        Self { ledger, store }
    }
}

// What the flash sale's `OrderArchive` asks, as methods of a store of any type; the trait
// itself is implemented where the store's type is concrete (lib.rs), since a generic store's
// futures are not known to be `Send`.
impl<S: LedgerStore> Archive<S> {
    /// Which of `order_ids` PostgreSQL holds; `None` when the ledger is off or does not answer
    /// within `within`.
    pub(crate) async fn held(
        &self,
        order_ids: &[String],
        within: Duration,
    ) -> Option<HashSet<String>> {
        let db = self.ledger.db.as_ref()?;
        match tokio::time::timeout(within, db.present(order_ids)).await {
            Ok(Ok(ids)) => Some(ids.into_iter().collect()),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "ledger lookup failed");
                None
            }
            Err(_) => None,
        }
    }

    /// Up to `limit` of `voucher`'s dead letters after `after`, as the flash sale shows them.
    pub(crate) async fn dead_orders(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadOrder>, StoreError> {
        let letters = dead_letters(&self.store, voucher, after, limit).await?;
        Ok(letters
            .into_iter()
            .map(|d| DeadOrder {
                cursor: d.dead_id,
                order: d.order.map(|row| {
                    // The order's own sequence is the tail of its id; its time otherwise.
                    let seq = row
                        .order_id
                        .rsplit('/')
                        .next()
                        .and_then(|s| s.parse::<Seq>().ok())
                        .unwrap_or(Seq {
                            ms: row.created_at_ms,
                            n: 0,
                        });
                    (seq, row.user)
                }),
                reason: d.reason,
                attempts: d.attempts,
            })
            .collect())
    }

    /// Hands `voucher`'s dead letters back to PostgreSQL: how many.
    pub(crate) async fn replay_dead(&self, voucher: &Name) -> Result<u64, ReplayFailed> {
        self.ledger
            .replay(&self.store, voucher)
            .await
            .map_err(|e| match e {
                ReplayError::Store(e) => ReplayFailed::Store(e),
                ReplayError::Database(reason) => ReplayFailed::Unavailable(reason),
            })
    }
}
