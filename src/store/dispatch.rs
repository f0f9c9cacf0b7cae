//! The one place where `Store` forwards each domain's store trait to the active backend.
//!
//! Why one hand-written dispatch file: the backends are a closed set chosen at start-up, and the
//! traits use `async fn`, so they cannot be `dyn` objects; a generic `AppState<S>` would carry a
//! type parameter through every handler and the router. A `match` per method (the `dispatch!`
//! macro in `mod.rs`, which also times the call under a fixed `op` label) keeps one line per
//! method here, and the compiler still refuses a backend that misses a method. A new domain adds
//! one `impl` block below.

use super::error::StoreError;
use super::Store;
use crate::checkins::{Calendar, CheckIn, CheckinStore, Cohort};
use crate::dedup::logic::Params;
use crate::dedup::{Added, DedupStore, FilterInfo, Policy, Reserved};
use crate::geo::{Found, GeoStore, LayerBound, LayerFull, Place, Search, Unit, UnknownCentre};
use crate::locks::{Attempt, Lock, LockStore, Watch};
use crate::queues::{Acked, Bell, Cancelled, Claim, DeadJob, Enqueued, NewJob, QueueStore, Stats};
use crate::ratelimit::logic::{Decision, Gcra, Window, WindowSeen};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::seckill::logic::Seq;
use crate::seckill::{Bought, Order, Put, Restock, SeckillStore, Spec, Voucher};
use crate::types::{Day, Idempotency, Month, Name, Once, UserId};
use crate::uv::{FoldDay, PageCounts, Recorded, UvStore};

impl CheckinStore for Store {
    async fn checkin_record(
        &self,
        user: UserId,
        day: Day,
        cal: &Calendar,
    ) -> Result<CheckIn, StoreError> {
        dispatch!(self, "checkins.check_in", s => s.checkin_record(user, day, cal).await)
    }
    async fn checkin_months(&self, user: UserId, months: &[Month]) -> Result<Vec<u32>, StoreError> {
        dispatch!(self, "checkins.months", s => s.checkin_months(user, months).await)
    }
    async fn checkin_cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        dispatch!(self, "checkins.cohort", s => s.checkin_cohort(days).await)
    }
}

impl UvStore for Store {
    async fn uv_record(
        &self,
        page: &Name,
        day: Day,
        visitors: &[String],
        expire_at: i64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Recorded>, StoreError> {
        dispatch!(self, "uv.record", s => s.uv_record(page, day, visitors, expire_at, idem).await)
    }
    async fn uv_page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> {
        dispatch!(self, "uv.page_counts", s => s.uv_page_counts(page, days).await)
    }
    async fn uv_union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> {
        dispatch!(self, "uv.union", s => s.uv_union(pages, days).await)
    }
    async fn uv_merge(
        &self,
        sources: &[Name],
        into: &Name,
        days: &[FoldDay],
    ) -> Result<u32, StoreError> {
        dispatch!(self, "uv.merge", s => s.uv_merge(sources, into, days).await)
    }
}

impl GeoStore for Store {
    async fn geo_put_many(
        &self,
        layer: &Name,
        places: &[Place],
        bound: LayerBound,
    ) -> Result<Result<u64, LayerFull>, StoreError> {
        dispatch!(self, "geo.geo_put_many", s => s.geo_put_many(layer, places, bound).await)
    }
    async fn geo_get(&self, layer: &Name, member: &Name) -> Result<Option<u64>, StoreError> {
        dispatch!(self, "geo.geo_get", s => s.geo_get(layer, member).await)
    }
    async fn geo_remove(&self, layer: &Name, member: &Name) -> Result<bool, StoreError> {
        dispatch!(self, "geo.geo_remove", s => s.geo_remove(layer, member).await)
    }
    async fn geo_distance(
        &self,
        layer: &Name,
        from: &Name,
        to: &Name,
        unit: Unit,
    ) -> Result<Option<f64>, StoreError> {
        dispatch!(self, "geo.geo_distance", s => s.geo_distance(layer, from, to, unit).await)
    }
    async fn geo_search(
        &self,
        layer: &Name,
        search: &Search,
    ) -> Result<Result<Found, UnknownCentre>, StoreError> {
        dispatch!(self, "geo.geo_search", s => s.geo_search(layer, search).await)
    }
}

impl SeckillStore for Store {
    async fn seckill_put(&self, voucher: &Name, spec: Spec, cap: u64) -> Result<Put, StoreError> {
        dispatch!(self, "seckill.put_voucher", s => s.seckill_put(voucher, spec, cap).await)
    }
    async fn seckill_restock(
        &self,
        voucher: &Name,
        quantity: u64,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Restock>, StoreError> {
        dispatch!(self, "seckill.restock", s => s.seckill_restock(voucher, quantity, cap, idem).await)
    }
    async fn seckill_voucher(&self, voucher: &Name) -> Result<Option<Voucher>, StoreError> {
        dispatch!(self, "seckill.voucher", s => s.seckill_voucher(voucher).await)
    }
    async fn seckill_buy(
        &self,
        voucher: &Name,
        user: UserId,
        cap: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Bought, StoreError> {
        dispatch!(self, "seckill.buy", s => s.seckill_buy(voucher, user, cap, idem).await)
    }
    async fn seckill_orders(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Option<Vec<Order>>, StoreError> {
        dispatch!(self, "seckill.orders", s => s.seckill_orders(voucher, after, limit).await)
    }
    async fn seckill_user_orders(
        &self,
        voucher: &Name,
        user: UserId,
    ) -> Result<Option<Vec<Seq>>, StoreError> {
        dispatch!(self, "seckill.user_orders", s => s.seckill_user_orders(voucher, user).await)
    }
}

impl RateLimitStore for Store {
    async fn ratelimit_throttle_once(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantity: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Decision>, StoreError> {
        dispatch!(self, "ratelimit.throttle", s => s.ratelimit_throttle_once(bucket, gcra, quantity, idem).await)
    }
    async fn ratelimit_throttle_many(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantities: &[u64],
    ) -> Result<Vec<Decision>, StoreError> {
        dispatch!(self, "ratelimit.throttle_many", s => s.ratelimit_throttle_many(bucket, gcra, quantities).await)
    }
    async fn ratelimit_window_once(
        &self,
        key: &Name,
        window: &Window,
        quantity: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<WindowSeen>, StoreError> {
        dispatch!(self, "ratelimit.window", s => s.ratelimit_window_once(key, window, quantity, idem).await)
    }
}

impl DedupStore for Store {
    async fn dedup_reserve(
        &self,
        filter: &Name,
        params: Params,
        policy: Policy,
    ) -> Result<Reserved, StoreError> {
        dispatch!(self, "dedup.reserve_filter", s => s.dedup_reserve(filter, params, policy).await)
    }
    async fn dedup_add(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Added, StoreError> {
        dispatch!(self, "dedup.add_to_filter", s => s.dedup_add(filter, items, policy).await)
    }
    async fn dedup_check(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Vec<bool>, StoreError> {
        dispatch!(self, "dedup.check_in_filter", s => s.dedup_check(filter, items, policy).await)
    }
    async fn dedup_info(&self, filter: &Name) -> Result<Option<FilterInfo>, StoreError> {
        dispatch!(self, "dedup.filter_info", s => s.dedup_info(filter).await)
    }
}

impl LockStore for Store {
    async fn lock_acquire(
        &self,
        name: &Name,
        owner: &Name,
        ttl_ms: u64,
    ) -> Result<Attempt, StoreError> {
        dispatch!(self, "locks.acquire", s => s.lock_acquire(name, owner, ttl_ms).await)
    }
    async fn lock_renew(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
        ttl_ms: u64,
    ) -> Result<Option<Lock>, StoreError> {
        dispatch!(self, "locks.renew", s => s.lock_renew(name, owner, token, ttl_ms).await)
    }
    async fn lock_release(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, "locks.release", s => s.lock_release(name, owner, token).await)
    }
    async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> {
        dispatch!(self, "locks.inspect", s => s.lock_inspect(name).await)
    }
    async fn lock_watch(&self, name: &Name) -> Watch {
        dispatch!(self, s => s.lock_watch(name).await)
    }
}

impl QueueStore for Store {
    async fn queue_enqueue(
        &self,
        queue: &Name,
        job: &NewJob,
        max_jobs: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Enqueued>, StoreError> {
        dispatch!(self, "queues.enqueue", s => s.queue_enqueue(queue, job, max_jobs, idem).await)
    }
    async fn queue_claim(
        &self,
        queue: &Name,
        max: u32,
        visibility_ms: u64,
    ) -> Result<Claim, StoreError> {
        dispatch!(self, "queues.claim", s => s.queue_claim(queue, max, visibility_ms).await)
    }
    async fn queue_ack(&self, queue: &Name, id: &Name, receipt: &str) -> Result<Acked, StoreError> {
        dispatch!(self, "queues.ack", s => s.queue_ack(queue, id, receipt).await)
    }
    async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> {
        dispatch!(self, "queues.cancel", s => s.queue_cancel(queue, id).await)
    }
    async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError> {
        dispatch!(self, "queues.stats", s => s.queue_stats(queue).await)
    }
    async fn queue_dead(
        &self,
        queue: &Name,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<DeadJob>, StoreError> {
        dispatch!(self, "queues.dead", s => s.queue_dead(queue, after, limit).await)
    }
    fn queue_bell(&self, queue: &Name) -> Bell {
        dispatch!(self, s => s.queue_bell(queue))
    }
}
