//! The embedded in-memory backend: the default when `REDIS_URL` is unset. State is per process.
//!
//! Each domain keeps its state behind its own `std::sync::Mutex`. A std mutex, not Tokio's:
//! the critical sections are short, pure computation and never span an `.await` (clippy's
//! `await_holding_lock` enforces it), which is exactly the case where a blocking mutex is cheaper.
//! One background task drops expired entries and gives their memory back (see `reclaim`); it
//! holds only a `Weak`, so it ends with the store.

mod checkins;
mod dedup;
mod geo;
mod locks;
mod queues;
mod ratelimit;
mod seckill;
mod uv;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::error::StoreError;
use super::ReadyInfo;
use crate::config::Settings;

/// Cheap-clone handle to the in-memory state.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    checkins: Mutex<checkins::State>,
    uv: Mutex<uv::State>,
    geo: Mutex<geo::State>,
    seckill: Mutex<seckill::State>,
    ratelimit: Mutex<ratelimit::State>,
    dedup: Mutex<dedup::State>,
    locks: Mutex<locks::State>,
    queues: Mutex<queues::State>,
    queue_bells: crate::queues::Bells,
}

/// How often expired entries are dropped. Short, because the global limiter writes one
/// short-lived bucket per client: at a high request rate from many clients a minute of expired
/// buckets is a lot of memory, while a purge is one pass over each map.
const PURGE_EVERY: Duration = Duration::from_secs(10);

impl MemoryStore {
    pub fn new(_settings: &Settings) -> Self {
        let shared = Arc::new(Shared::default());
        let weak = Arc::downgrade(&shared);
        tokio::spawn(purge_task(weak));
        Self { shared }
    }

    pub fn backend(&self) -> &'static str {
        "memory"
    }

    pub async fn ready(&self) -> Result<ReadyInfo, StoreError> {
        Ok(ReadyInfo {
            backend: "memory",
            redis_version: None,
            bloom_engine: "memory",
            degraded: Vec::new(),
        })
    }
}

async fn purge_task(shared: Weak<Shared>) {
    let mut tick = tokio::time::interval(PURGE_EVERY);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let now = chrono::Utc::now().timestamp();
        lock(&shared.checkins).purge(now);
        lock(&shared.uv).purge(now);
        lock(&shared.geo).purge(now);
        lock(&shared.seckill).purge(now);
        lock(&shared.ratelimit).purge(now);
        lock(&shared.dedup).purge(now);
        lock(&shared.locks).purge(now);
        lock(&shared.queues).purge(now);
    }
}

/// Drops the entries `keep` refuses, then shrinks the table once it is mostly empty: `retain`
/// alone frees the entries but keeps the table at its peak capacity forever, so a burst of
/// short-lived keys (a flood of new clients, say) would hold its memory after it expired.
/// Shrinking only below a quarter keeps the rehash rare.
fn reclaim<K: Eq + Hash, V>(map: &mut HashMap<K, V>, keep: impl FnMut(&K, &mut V) -> bool) {
    map.retain(keep);
    if map.capacity() > 64 && map.capacity() > 4 * map.len() {
        map.shrink_to(2 * map.len());
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it: every critical section
/// leaves the state consistent before anything can panic.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
