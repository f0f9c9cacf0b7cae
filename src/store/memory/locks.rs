//! Locks in memory: holders and fencing counters under one mutex, with the Redis keys'
//! expiries, and waiters woken directly on release.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{lock, reclaim, MemoryStore};
use crate::locks::logic::{next_token, FENCE_GRACE_MS};
use crate::locks::wake::Wakeups;
use crate::locks::{Attempt, Lock, LockStore, Watch};
use crate::store::error::StoreError;
use crate::types::Name;

#[derive(Debug, Default)]
pub(super) struct State {
    /// name → (owner, token, lease end in µs).
    held: HashMap<Name, (Name, u64, i128)>,
    /// name → (last token, expiry in µs).
    fences: HashMap<Name, (u64, i128)>,
    wakeups: Arc<Wakeups>,
}

impl State {
    pub(super) fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        reclaim(&mut self.held, |_, (_, _, at)| *at > now);
        reclaim(&mut self.fences, |_, (_, at)| *at > now);
    }

    fn holder(&self, name: &Name, now: i128) -> Option<&(Name, u64, i128)> {
        self.held.get(name).filter(|(_, _, at)| *at > now)
    }
}

/// The wall clock in µs, as Redis `TIME` reports it.
fn now_us() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i128)
}

fn lease(owner: &Name, token: u64, end: i128) -> Lock {
    Lock {
        owner: owner.clone(),
        token,
        expires_at_ms: (end / 1_000) as i64,
    }
}

impl LockStore for MemoryStore {
    async fn lock_acquire(
        &self,
        name: &Name,
        owner: &Name,
        ttl_ms: u64,
    ) -> Result<Attempt, StoreError> {
        let mut s = lock(&self.shared.locks);
        let now = now_us();
        let end = now + i128::from(ttl_ms) * 1_000;
        let fence_end = end + i128::from(FENCE_GRACE_MS) * 1_000;
        let token = match s.holder(name, now) {
            Some((held_by, _, at)) if held_by != owner => {
                return Ok(Attempt::Held {
                    retry_after_ms: ((at - now + 999) / 1_000) as u64,
                });
            }
            Some((_, token, _)) => *token,
            None => {
                let counter = s
                    .fences
                    .get(name)
                    .filter(|(_, at)| *at > now)
                    .map(|(c, _)| *c);
                next_token(counter, now as u64)
            }
        };
        s.held.insert(name.clone(), (owner.clone(), token, end));
        s.fences.insert(name.clone(), (token, fence_end));
        Ok(Attempt::Acquired(lease(owner, token, end)))
    }

    async fn lock_renew(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
        ttl_ms: u64,
    ) -> Result<Option<Lock>, StoreError> {
        let mut s = lock(&self.shared.locks);
        let now = now_us();
        if s.holder(name, now).map(|(o, t, _)| (o, *t)) != Some((owner, token)) {
            return Ok(None);
        }
        let end = now + i128::from(ttl_ms) * 1_000;
        s.held.insert(name.clone(), (owner.clone(), token, end));
        let fence_end = end + i128::from(FENCE_GRACE_MS) * 1_000;
        let fence = s.fences.entry(name.clone()).or_insert((token, fence_end));
        fence.1 = fence.1.max(fence_end);
        Ok(Some(lease(owner, token, end)))
    }

    async fn lock_release(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
    ) -> Result<bool, StoreError> {
        let mut s = lock(&self.shared.locks);
        if s.holder(name, now_us()).map(|(o, t, _)| (o, *t)) != Some((owner, token)) {
            return Ok(false);
        }
        s.held.remove(name);
        s.wakeups.wake(name.as_str());
        Ok(true)
    }

    async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> {
        let s = lock(&self.shared.locks);
        Ok(s.holder(name, now_us())
            .map(|(owner, token, end)| lease(owner, *token, *end)))
    }

    async fn lock_watch(&self, name: &Name) -> Watch {
        let wakeups = lock(&self.shared.locks).wakeups.clone();
        wakeups.watch(name.as_str())
    }
}
