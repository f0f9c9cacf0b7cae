//! Rate-limit checks in memory: one TAT per bucket, read, decided and written under the lock
//! so concurrent checks of one bucket serialise exactly as the Lua script does on Redis.

use std::collections::{HashMap, VecDeque};

use crate::policies::budget::{BudgetStore, Step};
use crate::ratelimit::logic::{self, Decision, Gcra, Window, WindowKind, WindowSeen, Write};
use crate::ratelimit::{Bucket, RateLimitStore, Spend, Throttle};
use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::{Name, Once, IDEMPOTENCY_SECS};

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    /// bucket → (TAT in µs, the key's expiry in µs), both on the wall clock like Redis `TIME`.
    buckets: HashMap<Bucket, (i128, i128)>,
    /// (bucket, idempotency key digest) → the first check under that key.
    replies: HashMap<(Bucket, String), Reply>,
    /// Sliding logs and fixed windows, as on Redis: (key, kind) → state and its expiry (µs).
    windows: HashMap<(Name, WindowKind), (Units, i128)>,
    /// (key, kind, idempotency key digest) → the first window check under that key.
    window_replies: HashMap<(Name, WindowKind, String), (String, WindowSeen, i128)>,
}

impl State {
    /// A sliding-log check of `quantity` units on the log at `slot` (current: nothing past its
    /// expiry), spending them if they fit.
    fn sliding(
        &mut self,
        slot: &(Name, WindowKind),
        window: &Window,
        quantity: u64,
        now: i128,
    ) -> Result<WindowSeen, StoreError> {
        let entry = self
            .windows
            .entry(slot.clone())
            .or_insert_with(|| (Units::Log(VecDeque::new()), now));
        let Units::Log(log) = &mut entry.0 else {
            return Err(StoreError::Internal("a window changed kind".to_owned()));
        };
        while log.front().is_some_and(|t| *t <= now - window.period) {
            log.pop_front();
        }
        let count = log.len() as u64;
        let fits = window.fits(count, quantity);
        let kth = (!fits && quantity <= window.limit).then(|| {
            let k = (count + quantity - window.limit) as usize;
            log.get(k.saturating_sub(1)).copied().unwrap_or(now)
        });
        let seen = WindowSeen {
            now,
            count,
            kth,
            newest: log.back().copied(),
        };
        if fits {
            log.extend(std::iter::repeat_n(now, quantity as usize));
        }
        match log.back() {
            Some(newest) => entry.1 = newest + window.period,
            None => {
                self.windows.remove(slot);
            }
        }
        Ok(seen)
    }

    /// A fixed-window check of `quantity` units on the count at `slot`, spending them if they
    /// fit.
    fn fixed(
        &mut self,
        slot: (Name, WindowKind),
        window: &Window,
        quantity: u64,
        now: i128,
    ) -> WindowSeen {
        let end = window.window_end(now);
        let count = match self.windows.get(&slot) {
            Some((Units::Count { count, end: e }, _)) if *e == end => *count,
            _ => 0,
        };
        if quantity > 0 && window.fits(count, quantity) {
            self.windows.insert(
                slot,
                (
                    Units::Count {
                        count: count + quantity,
                        end,
                    },
                    end,
                ),
            );
        }
        WindowSeen {
            now,
            count,
            kth: None,
            newest: None,
        }
    }
}

/// A window limit's stored state.
#[derive(Debug)]
enum Units {
    /// The sliding log: admitted units' times (µs), oldest first.
    Log(VecDeque<i128>),
    /// A fixed window's count and its end (µs).
    Count { count: u64, end: i128 },
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

impl Purge for State {
    fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        reclaim(&mut self.buckets, |_, (_, at)| *at > now);
        reclaim(&mut self.replies, |_, r| r.expires_at > now);
        reclaim(&mut self.windows, |_, (_, at)| *at > now);
        reclaim(&mut self.window_replies, |_, (_, _, at)| *at > now);
    }
}

/// The store's clock in µs, as Redis `TIME` reports it.
fn now_us(store: &MemoryStore) -> i128 {
    i128::from(store.clock().now_us())
}

impl RateLimitStore for MemoryStore {
    async fn ratelimit_throttle_once(
        &self,
        bucket: &Bucket,
        spend: Spend<'_, Gcra>,
    ) -> Result<Once<Decision>, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_us(self);
        let Spend {
            limit: gcra,
            quantity,
            idem,
        } = spend;
        if let Some(idem) = idem {
            let key = (bucket.clone(), idem.key.clone());
            if let Some(first) = s.replies.get(&key).filter(|r| r.expires_at > now) {
                let decision = logic::decide(gcra, quantity, first.now, first.stored);
                return Ok(idem.replay(&first.fingerprint, decision));
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

    async fn ratelimit_throttle_all(
        &self,
        steps: &[Throttle<'_>],
    ) -> Result<Vec<Decision>, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_us(self);
        let stored: Vec<Option<i128>> = steps
            .iter()
            .map(|step| {
                s.buckets
                    .get(&step.bucket)
                    .filter(|(_, at)| *at > now)
                    .map(|(tat, _)| *tat)
            })
            .collect();
        let asked: Vec<_> = steps
            .iter()
            .map(|step| (*step.gcra, step.quantity, step.enforce))
            .collect();
        let (decisions, admitted) = logic::decide_all(&asked, now, &stored);
        if admitted {
            for (step, decision) in steps.iter().zip(&decisions) {
                match decision.write {
                    Write::Nothing => {}
                    Write::Set { tat, expire_ms } => {
                        s.buckets
                            .insert(step.bucket.clone(), (tat, now + expire_ms * 1_000));
                    }
                    Write::Delete => {
                        s.buckets.remove(&step.bucket);
                    }
                }
            }
        }
        Ok(decisions)
    }

    async fn ratelimit_window_once(
        &self,
        key: &Name,
        spend: Spend<'_, Window>,
    ) -> Result<Once<WindowSeen>, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_us(self);
        let Spend {
            limit: window,
            quantity,
            idem,
        } = spend;
        if let Some(idem) = idem {
            let at = (key.clone(), window.kind, idem.key.clone());
            if let Some((fp, seen, _)) = s.window_replies.get(&at).filter(|r| r.2 > now) {
                return Ok(idem.replay(fp, *seen));
            }
        }
        let slot = (key.clone(), window.kind);
        // An entry past its expiry is a missing key, as on Redis.
        if s.windows.get(&slot).is_some_and(|(_, at)| *at <= now) {
            s.windows.remove(&slot);
        }
        let seen = match window.kind {
            WindowKind::Sliding => s.sliding(&slot, window, quantity, now)?,
            WindowKind::Fixed => s.fixed(slot, window, quantity, now),
        };
        if let Some(idem) = idem {
            s.window_replies.insert(
                (key.clone(), window.kind, idem.key.clone()),
                (
                    idem.fingerprint.clone(),
                    seen,
                    now + i128::from(IDEMPOTENCY_SECS) * 1_000_000,
                ),
            );
        }
        Ok(Once::Now(seen))
    }
}

budget_on_client_buckets!(BudgetStore, Step, MemoryStore);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;

    /// The global limiter writes one bucket per client; once they are full again (expired)
    /// the purge must give their memory back, not only hide them.
    #[tokio::test]
    async fn expired_buckets_are_reclaimed() {
        let mut settings = Settings::defaults();
        settings.clock = crate::clock::Clock::manual(std::time::SystemTime::now());
        let store = MemoryStore::new(&settings);
        let gcra = Gcra::new(1, 1, 1);
        for client in 0..10_000 {
            let bucket = Bucket::Client(format!("ip:10.0.{}.{}", client / 256, client % 256));
            store.ratelimit_throttle(&bucket, &gcra, 1).await.unwrap();
        }
        let peak = store.state(&STATE).buckets.capacity();
        assert!(peak >= 10_000);
        let now = store.clock().now_s();
        store.state(&STATE).purge(now);
        assert_eq!(
            store.state(&STATE).buckets.len(),
            10_000,
            "none expired yet"
        );
        store.state(&STATE).purge(now + 10);
        let s = store.state(&STATE);
        assert!(s.buckets.is_empty());
        assert!(
            s.buckets.capacity() < peak / 16,
            "the table shrinks with its entries (capacity {} after a peak of {peak})",
            s.buckets.capacity()
        );
    }
}
