//! Rate-limit checks in memory: one TAT per bucket, read, decided and written under the lock
//! so concurrent checks of one bucket serialise exactly as the Lua script does on Redis.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{lock, reclaim, MemoryStore};
use crate::ratelimit::logic::{self, Decision, Gcra, Write};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::StoreError;

#[derive(Debug, Default)]
pub(super) struct State {
    /// bucket → (TAT in µs, the key's expiry in µs), both on the wall clock like Redis `TIME`.
    buckets: HashMap<Bucket, (i128, i128)>,
}

impl State {
    pub(super) fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        reclaim(&mut self.buckets, |_, (_, at)| *at > now);
    }
}

/// The wall clock in µs, as Redis `TIME` reports it.
fn now_us() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i128)
}

impl RateLimitStore for MemoryStore {
    async fn throttle(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantity: u64,
    ) -> Result<Decision, StoreError> {
        let mut s = lock(&self.shared.ratelimit);
        let now = now_us();
        // An entry past its expiry is a missing key, as on Redis, even before the purge runs.
        let stored = s
            .buckets
            .get(bucket)
            .filter(|(_, at)| *at > now)
            .map(|(tat, _)| *tat);
        let decision = logic::decide(gcra, quantity, now, stored);
        match decision.write {
            Write::Nothing => {}
            Write::Set { tat, expire_ms } => {
                s.buckets
                    .insert(bucket.clone(), (tat, now + expire_ms * 1_000));
            }
            Write::Delete => {
                s.buckets.remove(bucket);
            }
        }
        Ok(decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    /// The global limiter writes one bucket per client; once they are full again (expired)
    /// the purge must give their memory back, not only hide them.
    #[tokio::test]
    async fn expired_buckets_are_reclaimed() {
        let store = MemoryStore::new(&Settings::defaults());
        let gcra = Gcra::new(1, 1, 1);
        for client in 0..10_000 {
            let bucket = Bucket::Client(format!("ip:10.0.{}.{}", client / 256, client % 256));
            store.throttle(&bucket, &gcra, 1).await.unwrap();
        }
        let peak = lock(&store.shared.ratelimit).buckets.capacity();
        assert!(peak >= 10_000);
        let now = chrono::Utc::now().timestamp();
        lock(&store.shared.ratelimit).purge(now);
        assert_eq!(
            lock(&store.shared.ratelimit).buckets.len(),
            10_000,
            "none expired yet"
        );
        lock(&store.shared.ratelimit).purge(now + 10);
        let s = lock(&store.shared.ratelimit);
        assert!(s.buckets.is_empty());
        assert!(
            s.buckets.capacity() < peak / 16,
            "the table shrinks with its entries (capacity {} after a peak of {peak})",
            s.buckets.capacity()
        );
    }
}
