//! Rate-limit checks in memory: one TAT per bucket, read, decided and written under the lock
//! so concurrent checks of one bucket serialise exactly as the Lua script does on Redis.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{lock, reclaim, MemoryStore};
use crate::ratelimit::logic::{self, Decision, Gcra, Write};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::error::StoreError;
use crate::types::{Idempotency, Once, IDEMPOTENCY_SECS};

#[derive(Debug, Default)]
pub(super) struct State {
    /// bucket → (TAT in µs, the key's expiry in µs), both on the wall clock like Redis `TIME`.
    buckets: HashMap<Bucket, (i128, i128)>,
    /// (bucket, idempotency key digest) → the first check under that key.
    replies: HashMap<(Bucket, String), Reply>,
}

/// What the first check under an idempotency key saw, so a replay decides identically.
#[derive(Debug)]
struct Reply {
    fingerprint: String,
    now: i128,
    stored: Option<i128>,
    /// µs, like `now`.
    expires_at: i128,
}

impl State {
    pub(super) fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        reclaim(&mut self.buckets, |_, (_, at)| *at > now);
        reclaim(&mut self.replies, |_, r| r.expires_at > now);
    }
}

/// The wall clock in µs, as Redis `TIME` reports it.
fn now_us() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i128)
}

impl RateLimitStore for MemoryStore {
    async fn ratelimit_throttle_once(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantity: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Decision>, StoreError> {
        let mut s = lock(&self.shared.ratelimit);
        let now = now_us();
        if let Some(idem) = idem {
            let key = (bucket.clone(), idem.key.clone());
            if let Some(first) = s.replies.get(&key).filter(|r| r.expires_at > now) {
                return Ok(if first.fingerprint == idem.fingerprint {
                    Once::Replayed(logic::decide(gcra, quantity, first.now, first.stored))
                } else {
                    Once::KeyReused
                });
            }
        }
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
        if let Some(idem) = idem {
            s.replies.insert(
                (bucket.clone(), idem.key.clone()),
                Reply {
                    fingerprint: idem.fingerprint.clone(),
                    now,
                    stored,
                    expires_at: now + i128::from(IDEMPOTENCY_SECS) * 1_000_000,
                },
            );
        }
        Ok(Once::Now(decision))
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
            store.ratelimit_throttle(&bucket, &gcra, 1).await.unwrap();
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
