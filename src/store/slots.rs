//! Per-store state that a domain's backend keeps for itself (the memory backend's maps, the Redis
//! backend's group commits and subscribers), without the store naming the domain: each domain
//! declares a `static` [`Slot`] for its state type, and the store hands out that state by slot.
//!
//! Written here rather than taken from a type-map crate because the lookup sits on every store
//! call: a slot is an index fixed on first use, so finding the state is one array read and one
//! `TypeId` comparison, no hashing and no lock.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Most slots a process declares (one or two per domain per backend); a new one past it panics
/// on first use, in every test.
const MAX_SLOTS: usize = 32;

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// State a backend keeps for one domain. `purge` drops what expired by `now` (unix seconds): the
/// memory backend calls it on a timer; state with nothing to expire keeps the default.
pub(crate) trait Kept: Any + Send + Sync {
    fn purge(&self, _now: i64) {}
}

/// Names one kind of per-store state, `T`, created with `T::default()` on first use.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    index: OnceLock<usize>,
    kind: PhantomData<fn() -> T>,
}

impl<T> Slot<T> {
    pub(crate) const fn new() -> Self {
        Self {
            index: OnceLock::new(),
            kind: PhantomData,
        }
    }

    fn index(&self) -> usize {
        *self.index.get_or_init(|| {
            let i = NEXT.fetch_add(1, Ordering::Relaxed);
            assert!(i < MAX_SLOTS, "more than {MAX_SLOTS} store slots declared");
            i
        })
    }
}

/// One store's states, by slot.
pub(crate) struct Slots {
    cells: [OnceLock<Box<dyn Kept>>; MAX_SLOTS],
}

impl Default for Slots {
    fn default() -> Self {
        Self {
            cells: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let used = self.cells.iter().filter(|c| c.get().is_some()).count();
        f.debug_struct("Slots").field("used", &used).finish()
    }
}

impl Slots {
    /// This store's `T`, made on first use.
    pub(crate) fn get<T: Kept + Default>(&self, slot: &'static Slot<T>) -> &T {
        let kept: &dyn Any = &**self.cells[slot.index()].get_or_init(|| Box::new(T::default()));
        kept.downcast_ref()
            .expect("a slot holds the type it was declared with")
    }

    /// Purges every state made so far.
    pub(crate) fn purge(&self, now: i64) {
        for cell in &self.cells {
            if let Some(kept) = cell.get() {
                kept.purge(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI64;

    #[derive(Default)]
    struct Counter(AtomicI64);
    impl Kept for Counter {
        fn purge(&self, now: i64) {
            self.0.store(now, Ordering::Relaxed);
        }
    }
    #[derive(Default)]
    struct Other(u8);
    impl Kept for Other {}

    static COUNTER: Slot<Counter> = Slot::new();
    static OTHER: Slot<Other> = Slot::new();

    #[test]
    fn each_store_has_its_own_state_per_slot() {
        let (a, b) = (Slots::default(), Slots::default());
        a.get(&COUNTER).0.store(7, Ordering::Relaxed);
        assert_eq!(a.get(&COUNTER).0.load(Ordering::Relaxed), 7);
        assert_eq!(b.get(&COUNTER).0.load(Ordering::Relaxed), 0);
        assert_eq!(a.get(&OTHER).0, 0);
        b.purge(42);
        assert_eq!(b.get(&COUNTER).0.load(Ordering::Relaxed), 42);
        assert_eq!(a.get(&COUNTER).0.load(Ordering::Relaxed), 7);
    }
}
