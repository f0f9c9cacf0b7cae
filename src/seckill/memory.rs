//! Flash sales in memory. The domain mutex only maps a voucher id to its own lock; every
//! operation then holds that voucher's lock for its whole in-memory critical section, so a
//! purchase is as atomic as the Lua script and sales of different vouchers never contend.
//! The clock is the gateway's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use crate::seckill::logic::{Listed, Phase, Seq};
use crate::seckill::{
    Bought, Changed, Heard, Idempotency, Listening, Once, Order, Put, Refusal, Restock,
    SeckillStore, Spec, Voucher, Vouchers, IDEMPOTENCY_SECS,
};
use crate::store::error::StoreError;
use crate::store::memory::{lock, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::{Name, UserId, Walk};

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    vouchers: HashMap<Name, Arc<Mutex<Sale>>>,
    /// The listing's index: begin → the vouchers that begin then, changed with the voucher
    /// under both locks, so it holds exactly the vouchers there are.
    by_begin: BTreeMap<i64, BTreeSet<Name>>,
}

impl Purge for State {
    /// Vouchers have no expiry (an admin owns their lifetime); purchase replies kept for
    /// idempotency keys do.
    fn purge(&mut self, now: i64) {
        for sale in self.vouchers.values() {
            let mut sale = lock(sale);
            if !sale.replies.is_empty() {
                sale.replies.retain(|_, r| r.expires_at > now);
            }
        }
    }
}

/// The first outcome of a write under one idempotency key. Purchases and restocks of a voucher
/// share the keys (as on Redis), so a key reused across them is a different request.
#[derive(Debug)]
struct Reply {
    fingerprint: String,
    outcome: Outcome,
    /// Unix seconds.
    expires_at: i64,
}

#[derive(Debug, Clone)]
enum Outcome {
    Bought(Result<Order, Refusal>),
    Restocked(Restock),
}

/// One voucher with its orders.
#[derive(Debug, Default)]
struct Sale {
    spec: Option<Spec>,
    sold: u64,
    /// Every order in sale order (ascending `seq`).
    orders: Vec<Order>,
    /// user → that user's order ids, oldest first.
    buyers: HashMap<u32, Vec<Seq>>,
    /// idempotency key digest → the first outcome under it.
    replies: HashMap<String, Reply>,
}

impl Sale {
    fn view(&self, spec: Spec, now_ms: i64) -> Voucher {
        Voucher {
            stock: spec.stock,
            sold: self.sold,
            begin_ms: spec.begin_ms,
            end_ms: spec.end_ms,
            per_user_limit: spec.per_user_limit,
            now_ms,
        }
    }
}

/// A voucher's event channel in this process.
fn channel(voucher: &Name) -> String {
    format!("sk:{voucher}")
}

impl MemoryStore {
    /// Tells `voucher`'s listeners its state now, as the Redis scripts publish it.
    fn publish(&self, voucher: &Name, sale: &Sale, spec: Spec) {
        if !self.channels().any() {
            return;
        }
        let changed = Changed {
            stock: spec.stock,
            sold: sale.sold,
            begin_ms: spec.begin_ms,
            end_ms: spec.end_ms,
        };
        self.channels()
            .tell(&channel(voucher), Heard::Message(changed.message().into()));
    }

    /// The voucher's own lock, if it exists (`create` makes an empty one).
    fn sale(&self, voucher: &Name, create: bool) -> Option<Arc<Mutex<Sale>>> {
        let mut s = self.state(&STATE);
        if create {
            return Some(s.vouchers.entry(voucher.clone()).or_default().clone());
        }
        s.vouchers.get(voucher).cloned()
    }

    /// `read` on the voucher's sale and its spec, under the sale's lock; `None` when the voucher
    /// is unknown (never put, or only reserved by a refused put).
    fn read_sale<T>(&self, voucher: &Name, read: impl FnOnce(&Sale, Spec) -> T) -> Option<T> {
        let sale = self.sale(voucher, false)?;
        let sale = lock(&sale);
        sale.spec.map(|spec| read(&sale, spec))
    }
}

impl SeckillStore for MemoryStore {
    async fn seckill_put(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> {
        // The domain's lock first, as everywhere (then the voucher's): the index changes with
        // the voucher.
        let mut s = self.state(&STATE);
        let sale = s.vouchers.entry(voucher.clone()).or_default().clone();
        let mut sale = lock(&sale);
        if spec.stock.saturating_add(sale.sold) > cap {
            return Ok(Put::OverCap { sold: sale.sold });
        }
        let old = sale.spec.replace(spec);
        if let Some(old) = old {
            unindex(&mut s.by_begin, old.begin_ms, voucher);
        }
        s.by_begin
            .entry(spec.begin_ms)
            .or_default()
            .insert(voucher.clone());
        self.publish(voucher, &sale, spec);
        let view = sale.view(spec, self.clock().now_ms());
        Ok(if old.is_some() {
            Put::Replaced(view)
        } else {
            Put::Created(view)
        })
    }

    async fn seckill_list(
        &self,
        after: Option<Listed>,
        phase: Option<Phase>,
        limit: usize,
        examine: usize,
    ) -> Result<Vouchers, StoreError> {
        let s = self.state(&STATE);
        let now_ms = self.clock().now_ms();
        let first = phase.and_then(|p| p.first_begin(now_ms));
        let last = phase.and_then(|p| p.last_begin(now_ms));
        let from = match (&after, first) {
            (Some(a), Some(f)) if f > a.begin_ms => Bound::Included(f),
            (Some(a), _) => Bound::Included(a.begin_ms),
            (None, Some(f)) => Bound::Included(f),
            (None, None) => Bound::Unbounded,
        };
        let to = last.map_or(Bound::Unbounded, Bound::Included);
        let entries = s.by_begin.range((from, to)).flat_map(|(begin, ids)| {
            ids.iter().map(|id| Listed {
                begin_ms: *begin,
                voucher: id.clone(),
            })
        });
        let mut entries = entries.filter(|at| after.as_ref().is_none_or(|a| at > a));
        let read: Vec<Listed> = entries.by_ref().take(examine).collect();
        let more = entries.next().is_some();
        let kept = read
            .iter()
            .map(|at| {
                let sale = lock(s.vouchers.get(&at.voucher)?);
                let v = sale.spec.map(|spec| sale.view(spec, now_ms))?;
                phase.is_none_or(|p| p.holds(v.status())).then_some(v)
            })
            .collect();
        let page = Walk::new(None, limit, examine).take(read, kept, more);
        Ok(page.expect("one read of `examine` entries ends the walk"))
    }

    async fn seckill_restock(
        &self,
        voucher: &Name,
        quantity: u64,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Restock>, StoreError> {
        let Some(sale) = self.sale(voucher, false) else {
            return Ok(Once::Now(Restock::NotFound));
        };
        let mut sale = lock(&sale);
        if sale.spec.is_none() {
            return Ok(Once::Now(Restock::NotFound));
        }
        let now_ms = self.clock().now_ms();
        let now_s = now_ms.div_euclid(1_000);
        if let Some(idem) = idem {
            if let Some(first) = sale.replies.get(&idem.key).filter(|r| r.expires_at > now_s) {
                return Ok(match first.outcome {
                    Outcome::Restocked(outcome) if first.fingerprint == idem.fingerprint => {
                        Once::Replayed(outcome)
                    }
                    _ => Once::KeyReused,
                });
            }
        }
        let sold = sale.sold;
        let spec = sale.spec.as_mut().expect("checked above");
        let outcome = if spec.stock.saturating_add(sold).saturating_add(quantity) > cap {
            Restock::OverCap {
                stock: spec.stock,
                sold,
            }
        } else {
            spec.stock += quantity;
            let spec = *spec;
            self.publish(voucher, &sale, spec);
            Restock::Done(sale.view(spec, now_ms))
        };
        if let Some(idem) = idem {
            sale.replies.insert(
                idem.key.clone(),
                Reply {
                    fingerprint: idem.fingerprint.clone(),
                    outcome: Outcome::Restocked(outcome),
                    expires_at: now_s + IDEMPOTENCY_SECS as i64,
                },
            );
        }
        Ok(Once::Now(outcome))
    }

    async fn seckill_voucher(&self, voucher: &Name) -> Result<Option<Voucher>, StoreError> {
        Ok(self.read_sale(voucher, |sale, spec| sale.view(spec, self.clock().now_ms())))
    }

    async fn seckill_buy(
        &self,
        voucher: &Name,
        user: UserId,
        _cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Bought, StoreError> {
        let Some(sale) = self.sale(voucher, false) else {
            return Ok(Bought::Now(Err(Refusal::NotFound)));
        };
        let mut sale = lock(&sale);
        let Some(spec) = sale.spec else {
            return Ok(Bought::Now(Err(Refusal::NotFound)));
        };
        let now_ms = self.clock().now_ms();
        let now_s = now_ms.div_euclid(1_000);
        if let Some(idem) = idem {
            if let Some(first) = sale.replies.get(&idem.key).filter(|r| r.expires_at > now_s) {
                return Ok(match &first.outcome {
                    // Its orders as they are now, as the Redis backend replays it (its record
                    // keeps no ids: seckill_buy.lua).
                    Outcome::Bought(Err(Refusal::AlreadyOrdered(_)))
                        if first.fingerprint == idem.fingerprint =>
                    {
                        let held = sale.buyers.get(&user.0).cloned().unwrap_or_default();
                        Bought::Replayed(Err(Refusal::AlreadyOrdered(held)))
                    }
                    Outcome::Bought(outcome) if first.fingerprint == idem.fingerprint => {
                        Bought::Replayed(outcome.clone())
                    }
                    _ => Bought::KeyReused,
                });
            }
        }
        let outcome = sell(&mut sale, spec, user, now_ms);
        if outcome.is_ok() {
            let spec = sale.spec.expect("sold from it");
            self.publish(voucher, &sale, spec);
        }
        if let Some(idem) = idem {
            sale.replies.insert(
                idem.key.clone(),
                Reply {
                    fingerprint: idem.fingerprint.clone(),
                    outcome: Outcome::Bought(outcome.clone()),
                    expires_at: now_s + IDEMPOTENCY_SECS as i64,
                },
            );
        }
        Ok(Bought::Now(outcome))
    }

    async fn seckill_orders(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Option<Vec<Order>>, StoreError> {
        Ok(self.read_sale(voucher, |sale, _| {
            let start = after.map_or(0, |a| sale.orders.partition_point(|o| o.seq <= a));
            sale.orders
                .iter()
                .skip(start)
                .take(limit)
                .copied()
                .collect()
        }))
    }

    async fn seckill_user_orders(
        &self,
        voucher: &Name,
        user: UserId,
    ) -> Result<Option<Vec<Seq>>, StoreError> {
        Ok(self.read_sale(voucher, |sale, _| {
            sale.buyers.get(&user.0).cloned().unwrap_or_default()
        }))
    }

    async fn seckill_listen(&self, voucher: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&channel(voucher)))
    }
}

/// What the order ledger reads of this backend (`src/ledger/memory.rs`), as on Redis it reads
/// the voucher registry and the order streams: the ledger keeps its consumer group, attempts
/// and dead letters in a slot of its own, and only reads the orders here.
impl MemoryStore {
    /// Every voucher ever created (as on Redis, possibly one whose creation was refused).
    pub(crate) fn seckill_voucher_ids(&self) -> Vec<Name> {
        self.state(&STATE).vouchers.keys().cloned().collect()
    }

    /// Up to `limit` orders of `voucher` from `from` on (inclusive, as `XRANGE` starts), each
    /// with its place among its buyer's orders (1 for their first: the `nth` of the Redis order
    /// stream), and how many orders there are from `from` on in all.
    pub(crate) fn seckill_order_log(
        &self,
        voucher: &Name,
        from: Option<Seq>,
        limit: usize,
    ) -> (Vec<(Order, u32)>, u64) {
        let Some(sale) = self.sale(voucher, false) else {
            return (Vec::new(), 0);
        };
        let sale = lock(&sale);
        let start = from.map_or(0, |f| sale.orders.partition_point(|o| o.seq < f));
        let log = sale.orders[start..]
            .iter()
            .take(limit)
            .map(|o| {
                let nth = sale
                    .buyers
                    .get(&o.user.0)
                    .and_then(|seqs| seqs.binary_search(&o.seq).ok())
                    .map_or(0, |i| u32::try_from(i + 1).unwrap_or(u32::MAX));
                (*o, nth)
            })
            .collect();
        (log, (sale.orders.len() - start) as u64)
    }
}

/// Takes `voucher` out of the index at `begin`.
fn unindex(by_begin: &mut BTreeMap<i64, BTreeSet<Name>>, begin: i64, voucher: &Name) {
    if let Some(ids) = by_begin.get_mut(&begin) {
        ids.remove(voucher);
        if ids.is_empty() {
            by_begin.remove(&begin);
        }
    }
}

/// The purchase itself, under the voucher's lock.
fn sell(sale: &mut Sale, spec: Spec, user: UserId, now: i64) -> Result<Order, Refusal> {
    if now < spec.begin_ms {
        return Err(Refusal::NotStarted);
    }
    if now >= spec.end_ms {
        return Err(Refusal::Ended);
    }
    if spec.stock == 0 {
        return Err(Refusal::SoldOut);
    }
    let held = sale.buyers.get(&user.0).map_or(&[][..], Vec::as_slice);
    if held.len() >= spec.per_user_limit as usize {
        return Err(Refusal::AlreadyOrdered(held.to_vec()));
    }
    let seq = Seq::next(
        sale.orders.last().map(|o| o.seq),
        u64::try_from(now).unwrap_or(0),
    );
    let order = Order { seq, user };
    sale.orders.push(order);
    sale.buyers.entry(user.0).or_default().push(seq);
    sale.sold += 1;
    if let Some(spec) = sale.spec.as_mut() {
        spec.stock -= 1;
    }
    Ok(order)
}
