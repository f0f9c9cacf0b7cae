//! The embedded in-memory backend: the default when `REDIS_URL` is unset. State is per process.
//!
//! Each domain keeps its state (its `memory.rs`) in a slot of the store behind its own
//! `std::sync::Mutex`. A std mutex, not Tokio's:
//! the critical sections are short, pure computation and never span an `.await` (clippy's
//! `await_holding_lock` enforces it), which is exactly the case where a blocking mutex is cheaper.
//! One background task drops expired entries and gives their memory back (see `reclaim`); it
//! holds only a `Weak`, so it ends with the store.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::error::StoreError;
use super::slots::{Kept, Slot, Slots};
use super::ReadyInfo;
use crate::clock::Clock;
use crate::config::Common;

/// Cheap-clone handle to the in-memory state.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    slots: Slots,
    /// What every domain's state reads "now" from (`Common::clock`).
    clock: Clock,
    /// The event channels: a write publishes straight to this process's listeners.
    channels: Arc<super::channels::Channels>,
}

/// A domain's in-memory state: its maps and what they expire.
pub(crate) trait Purge: Default + Send + 'static {
    /// Drops what expired by `now` (unix seconds).
    fn purge(&mut self, now: i64);
}

/// A domain's state behind its own mutex, in a slot of the store (`static STATE:
/// Slot<Locked<State>>` in the domain's `memory.rs`).
#[derive(Debug, Default)]
pub(crate) struct Locked<T>(Mutex<T>);

impl<T: Purge> Kept for Locked<T> {
    fn purge(&self, now: i64) {
        lock(&self.0).purge(now);
    }
}

/// How often expired entries are dropped. Short, because the global limiter writes one
/// short-lived bucket per client: at a high request rate from many clients a minute of expired
/// buckets is a lot of memory, while a purge is one pass over each map.
const PURGE_EVERY: Duration = Duration::from_secs(10);

impl MemoryStore {
    pub fn new(settings: &Common) -> Self {
        let shared = Arc::new(Shared {
            slots: Slots::default(),
            clock: settings.clock.clone(),
            channels: Arc::default(),
        });
        let weak = Arc::downgrade(&shared);
        tokio::spawn(purge_task(weak));
        Self { shared }
    }

    pub fn backend(&self) -> &'static str {
        "memory"
    }

    /// The clock this store's state reads "now" from.
    pub(crate) fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    /// The event channels of this store.
    pub(crate) fn channels(&self) -> &Arc<super::channels::Channels> {
        &self.shared.channels
    }

    /// This store's `T`, locked.
    pub(crate) fn state<T: Purge>(&self, slot: &'static Slot<Locked<T>>) -> MutexGuard<'_, T> {
        lock(&self.shared.slots.get(slot).0)
    }

    /// This store's `T`, for state that needs no lock of the store's making.
    pub(crate) fn kept<T: Kept + Default>(&self, slot: &'static Slot<T>) -> &T {
        self.shared.slots.get(slot)
    }

    pub async fn ready(&self) -> Result<ReadyInfo, StoreError> {
        Ok(ReadyInfo {
            backend: "memory",
            redis_version: None,
            server: None,
            degraded: Vec::new(),
            write_replicas: None,
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
        let now = shared.clock.now_s();
        shared.slots.purge(now);
    }
}

/// Drops the entries `keep` refuses, then shrinks the table once it is mostly empty: `retain`
/// alone frees the entries but keeps the table at its peak capacity forever, so a burst of
/// short-lived keys (a flood of new clients, say) would hold its memory after it expired.
/// Shrinking only below a quarter keeps the rehash rare.
pub(crate) fn reclaim<K: Eq + Hash, V>(
    map: &mut HashMap<K, V>,
    keep: impl FnMut(&K, &mut V) -> bool,
) {
    map.retain(keep);
    if map.capacity() > 64 && map.capacity() > 4 * map.len() {
        map.shrink_to(2 * map.len());
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it: every critical section
/// leaves the state consistent before anything can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
