//! Rate-limit checks in memory: one TAT per bucket, read, decided and written under the lock
//! so concurrent checks of one bucket serialise exactly as the Lua script does on Redis.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{lock, MemoryStore};
use crate::ratelimit::logic::{self, Decision, Gcra, Write};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::error::StoreError;

#[derive(Debug, Default)]
pub(super) struct State {
    /// bucket → (TAT in µs, the key's expiry in µs), both on the wall clock like Redis `TIME`.
    buckets: HashMap<Bucket, (i128, i128)>,
}

impl State {
    pub(super) fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        self.buckets.retain(|_, (_, at)| *at > now);
    }
}

/// The wall clock in µs, as Redis `TIME` reports it.
fn now_us() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i128)
}

impl RateLimitStore for MemoryStore {
    async fn ratelimit_throttle(
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
