//! The order ledger in memory: a consumer group over each voucher's orders as the memory
//! backend's flash sale logs them (`src/seckill/memory.rs`), with what `ledger_*.lua` keeps on
//! Redis — who holds which pending entry since when, the refusal counts, the dead letters — in
//! this domain's own slot. The clock is the gateway's.

use std::collections::{BTreeMap, HashMap};

use crate::ledger::{Backlog, DeadLetter, LedgerStore, Row, Take, Taken};
use crate::seckill::logic::Seq;
use crate::seckill::Order;
use crate::store::error::StoreError;
use crate::store::memory::{Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::Name;

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    groups: HashMap<Name, Group>,
}

/// Nothing expires: dead letters stay until replayed, like the Redis stream.
impl Purge for State {
    fn purge(&mut self, _now: i64) {}
}

/// The consumer group of one voucher's orders, and its dead letters.
#[derive(Debug, Default)]
struct Group {
    /// The last order handed out (the group's last-delivered id).
    delivered: Option<Seq>,
    /// Handed out and not acknowledged, by order id.
    pending: BTreeMap<Seq, Pending>,
    /// Times the sink refused each pending order's row.
    attempts: HashMap<Seq, u64>,
    /// Oldest first, by their own ids (minted like the orders').
    dead: Vec<DeadLetter>,
}

#[derive(Debug)]
struct Pending {
    /// Which consumer holds it, since when (unix ms).
    consumer: String,
    since_ms: u64,
    order: Row,
}

/// The store's clock in ms.
fn now_ms(store: &MemoryStore) -> u64 {
    u64::try_from(store.clock().now_ms()).unwrap_or(0)
}

/// The row an order of `voucher` is stored as.
fn row(voucher: &Name, order: Order, nth: u32) -> Row {
    Row {
        order_id: format!("{voucher}/{}", order.seq),
        voucher: voucher.clone(),
        user: order.user,
        nth,
        created_at_ms: order.seq.ms,
    }
}

/// Where the orders not yet handed out start (`None`: from the first); nothing when the last
/// one handed out is the largest id there can be.
fn undelivered(delivered: Option<Seq>) -> Option<Option<Seq>> {
    match delivered {
        None => Some(None),
        Some(last) => last.successor().map(Some),
    }
}

impl LedgerStore for MemoryStore {
    async fn ledger_vouchers(&self) -> Result<Vec<Name>, StoreError> {
        Ok(self.seckill_voucher_ids())
    }

    async fn ledger_take(&self, voucher: &Name, take: Take<'_>) -> Result<Vec<Taken>, StoreError> {
        let now = now_ms(self);
        let mut state = self.state(&STATE);
        let group = state.groups.entry(voucher.clone()).or_default();
        let mut out = Vec::new();
        // Entries idle long enough, whoever holds them (XAUTOCLAIM from the start).
        for (id, p) in &mut group.pending {
            if out.len() == take.count {
                break;
            }
            if now.saturating_sub(p.since_ms) >= take.claim_idle_ms {
                p.consumer = take.consumer.to_owned();
                p.since_ms = now;
                out.push(Taken {
                    id: *id,
                    order: Some(p.order.clone()),
                    attempts: group.attempts.get(id).copied().unwrap_or(0),
                });
            }
        }
        // Then new ones (XREADGROUP `>`).
        if out.len() < take.count {
            if let Some(from) = undelivered(group.delivered) {
                let (fresh, _) = self.seckill_order_log(voucher, from, take.count - out.len());
                for (order, nth) in fresh {
                    let id = order.seq;
                    let order = row(voucher, order, nth);
                    group.delivered = Some(id);
                    group.pending.insert(
                        id,
                        Pending {
                            consumer: take.consumer.to_owned(),
                            since_ms: now,
                            order: order.clone(),
                        },
                    );
                    out.push(Taken {
                        id,
                        order: Some(order),
                        attempts: 0,
                    });
                }
            }
        }
        Ok(out)
    }

    async fn ledger_ack(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        let mut state = self.state(&STATE);
        if let Some(group) = state.groups.get_mut(voucher) {
            for id in ids {
                group.pending.remove(id);
                group.attempts.remove(id);
            }
        }
        Ok(())
    }

    async fn ledger_refuse(
        &self,
        voucher: &Name,
        ids: &[Seq],
        reason: &str,
        max_attempts: u64,
    ) -> Result<u64, StoreError> {
        let now = now_ms(self);
        let mut state = self.state(&STATE);
        let group = state.groups.entry(voucher.clone()).or_default();
        let mut dead = 0;
        for id in ids {
            let attempts = group.attempts.entry(*id).or_default();
            *attempts += 1;
            let attempts = *attempts;
            if attempts < max_attempts {
                continue;
            }
            // Copied with the order as the log has it, then acknowledged, in one step.
            let order = match group.pending.remove(id) {
                Some(p) => Some(p.order),
                None => self
                    .seckill_order_log(voucher, Some(*id), 1)
                    .0
                    .into_iter()
                    .find(|(o, _)| o.seq == *id)
                    .map(|(o, nth)| row(voucher, o, nth)),
            };
            group.attempts.remove(id);
            let dead_id = Seq::next(group.dead.last().map(|d| d.dead_id), now);
            group.dead.push(DeadLetter {
                dead_id,
                order,
                reason: reason.to_owned(),
                attempts: Some(attempts),
            });
            dead += 1;
        }
        Ok(dead)
    }

    async fn ledger_backlog(&self, voucher: &Name) -> Result<Backlog, StoreError> {
        let state = self.state(&STATE);
        let group = state.groups.get(voucher);
        let lag = undelivered(group.and_then(|g| g.delivered))
            .map_or(0, |from| self.seckill_order_log(voucher, from, 0).1);
        Ok(Backlog {
            pending: group.map_or(0, |g| g.pending.len() as u64),
            lag,
            dead_lettered: group.map_or(0, |g| g.dead.len() as u64),
        })
    }

    async fn ledger_dead_letters(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let state = self.state(&STATE);
        let Some(group) = state.groups.get(voucher) else {
            return Ok(Vec::new());
        };
        let start = after.map_or(0, |a| group.dead.partition_point(|d| d.dead_id <= a));
        Ok(group.dead.iter().skip(start).take(limit).cloned().collect())
    }

    async fn ledger_forget_dead(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> {
        let mut state = self.state(&STATE);
        if let Some(group) = state.groups.get_mut(voucher) {
            group.dead.retain(|d| !ids.contains(&d.dead_id));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::seckill::{Bought, SeckillStore, Spec};
    use crate::settings::Settings;
    use crate::types::UserId;

    /// A memory store with voucher `v1` on sale now and an order for each of `buyers`, in turn
    /// (the ingester's tests start from it too).
    pub(crate) async fn sold(buyers: impl IntoIterator<Item = u32>) -> (MemoryStore, Name) {
        let store = MemoryStore::new(&Settings::defaults());
        let v = Name::try_from("v1".to_owned()).unwrap();
        let now = chrono::Utc::now().timestamp_millis();
        let spec = Spec {
            stock: 100,
            begin_ms: now - 60_000,
            end_ms: now + 3_600_000,
            per_user_limit: 2,
        };
        store.seckill_put(&v, spec, 1000).await.unwrap();
        for u in buyers {
            let bought = store.seckill_buy(&v, UserId(u), 1000, None).await.unwrap();
            assert!(matches!(bought, Bought::Now(Ok(_))), "{bought:?}");
        }
        (store, v)
    }

    /// What `ledger_take.lua` does: new entries go to one consumer each, a pending entry is
    /// taken over only once idle long enough, and each row carries the buyer's `nth`.
    #[tokio::test]
    async fn the_group_hands_each_entry_to_one_consumer_at_a_time() {
        let (store, v) = sold([7, 8, 7]).await;
        let take = |consumer, claim_idle_ms, count| Take {
            consumer,
            claim_idle_ms,
            count,
        };
        assert_eq!(
            store.ledger_vouchers().await.unwrap(),
            std::slice::from_ref(&v)
        );
        let a = store.ledger_take(&v, take("a", 60_000, 2)).await.unwrap();
        let b = store.ledger_take(&v, take("b", 60_000, 10)).await.unwrap();
        let nth = |t: &Taken| {
            let o = t.order.as_ref().unwrap();
            (o.user.0, o.nth)
        };
        assert_eq!(a.iter().map(nth).collect::<Vec<_>>(), [(7, 1), (8, 1)]);
        assert_eq!(b.iter().map(nth).collect::<Vec<_>>(), [(7, 2)]);
        assert!(a[0].id < a[1].id && a[1].id < b[0].id);
        let backlog = store.ledger_backlog(&v).await.unwrap();
        assert_eq!((backlog.pending, backlog.lag), (3, 0));
        // Not idle long enough: nobody else gets them; idle enough: taken over, in id order.
        assert!(store
            .ledger_take(&v, take("c", 60_000, 10))
            .await
            .unwrap()
            .is_empty());
        let c = store.ledger_take(&v, take("c", 0, 2)).await.unwrap();
        assert_eq!(
            c.iter().map(|t| t.id).collect::<Vec<_>>(),
            [a[0].id, a[1].id]
        );
        store.ledger_ack(&v, &[a[0].id, b[0].id]).await.unwrap();
        assert_eq!(store.ledger_backlog(&v).await.unwrap().pending, 1);
        // A dead letter keeps the order, and is listed after its cursor and forgotten by id.
        assert_eq!(
            store.ledger_refuse(&v, &[a[1].id], "x", 1).await.unwrap(),
            1
        );
        let dead = store.ledger_dead_letters(&v, None, 10).await.unwrap();
        assert_eq!(dead[0].order.as_ref().map(|o| o.nth), Some(1));
        assert!(store
            .ledger_dead_letters(&v, Some(dead[0].dead_id), 10)
            .await
            .unwrap()
            .is_empty());
        store
            .ledger_forget_dead(&v, &[dead[0].dead_id])
            .await
            .unwrap();
        let backlog = store.ledger_backlog(&v).await.unwrap();
        assert_eq!(
            (backlog.pending, backlog.lag, backlog.dead_lettered),
            (0, 0, 0)
        );
    }
}
