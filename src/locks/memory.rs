//! Locks in memory: holders and fencing counters under one mutex, with the Redis keys'
//! expiries, and one waiter woken directly on each release.

use std::collections::HashMap;

use crate::locks::logic::{next_token, FENCE_GRACE_MS};
use crate::locks::wake::Wakeups;
use crate::locks::{Attempt, Lock, LockStore, Watch};
use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::Name;

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    /// name → (owner, token, lease end in µs).
    held: HashMap<Name, (Name, u64, i128)>,
    /// name → (last token, expiry in µs).
    fences: HashMap<Name, (u64, i128)>,
    wakeups: Wakeups,
}

impl State {
    fn holder(&self, name: &Name, now: i128) -> Option<&(Name, u64, i128)> {
        self.held.get(name).filter(|(_, _, at)| *at > now)
    }
}

impl Purge for State {
    fn purge(&mut self, now: i64) {
        let now = i128::from(now) * 1_000_000;
        reclaim(&mut self.held, |_, (_, _, at)| *at > now);
        reclaim(&mut self.fences, |_, (_, at)| *at > now);
    }
}

/// The store's clock in µs, as Redis `TIME` reports it.
fn now_us(store: &MemoryStore) -> i128 {
    i128::from(store.clock().now_us())
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
        let mut s = self.state(&STATE);
        let now = now_us(self);
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
        let mut s = self.state(&STATE);
        let now = now_us(self);
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
        let mut s = self.state(&STATE);
        if s.holder(name, now_us(self)).map(|(o, t, _)| (o, *t)) != Some((owner, token)) {
            return Ok(false);
        }
        s.held.remove(name);
        s.wakeups.released(name.as_str());
        Ok(true)
    }

    async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> {
        let s = self.state(&STATE);
        Ok(s.holder(name, now_us(self))
            .map(|(owner, token, end)| lease(owner, *token, *end)))
    }

    async fn lock_watch(&self, name: &Name) -> Watch {
        // Every release is this process's own and tells the room (`lock_release`).
        self.state(&STATE)
            .wakeups
            .watch(name.as_str(), self.clock())
    }
}

/// How the waiting acquisitions of `crate::locks::acquire` use a real backend (this one): how
/// many attempts a release or a lease's end costs, whichever acquisitions wait. Here, not
/// beside `acquire`: the domain core does not import a backend (tests/architecture.rs).
#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::locks::acquire;
    use crate::types::testing::{eventually, name};

    /// This backend, counting the acquisition attempts that reach it; an attempt can be made to
    /// stall until its task is aborted (a client that goes away while its acquisition tries).
    struct Counted {
        store: MemoryStore,
        tries: AtomicUsize,
        stall_next: AtomicBool,
    }

    impl LockStore for Counted {
        async fn lock_acquire(
            &self,
            name: &Name,
            owner: &Name,
            ttl_ms: u64,
        ) -> Result<Attempt, StoreError> {
            if self.stall_next.swap(false, Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let attempt = self.store.lock_acquire(name, owner, ttl_ms).await;
            self.tries.fetch_add(1, Ordering::SeqCst);
            attempt
        }
        async fn lock_renew(
            &self,
            name: &Name,
            owner: &Name,
            token: u64,
            ttl_ms: u64,
        ) -> Result<Option<Lock>, StoreError> {
            self.store.lock_renew(name, owner, token, ttl_ms).await
        }
        async fn lock_release(
            &self,
            name: &Name,
            owner: &Name,
            token: u64,
        ) -> Result<bool, StoreError> {
            self.store.lock_release(name, owner, token).await
        }
        async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> {
            self.store.lock_inspect(name).await
        }
        async fn lock_watch(&self, name: &Name) -> Watch {
            self.store.lock_watch(name).await
        }
    }

    impl Counted {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                store: MemoryStore::new(&crate::settings::Settings::defaults()),
                tries: AtomicUsize::new(0),
                stall_next: AtomicBool::new(false),
            })
        }

        fn tries(&self) -> usize {
            self.tries.load(Ordering::SeqCst)
        }

        async fn until_tries(&self, n: usize) {
            eventually("the acquisitions tried", || async { self.tries() >= n }).await;
        }

        async fn take(&self, lock: &Name, owner: &str, ttl_ms: u64) -> Lock {
            match self.store.lock_acquire(lock, &name(owner), ttl_ms).await {
                Ok(Attempt::Acquired(l)) => l,
                other => panic!("{other:?}"),
            }
        }
    }

    type Waiter = tokio::task::JoinHandle<Attempt>;

    /// `n` acquisitions of `lock` (owners `{prefix}0`..), waiting up to 10 s, once each has made
    /// its attempts before sleeping (one, then one more once it listens for releases).
    async fn waiters(store: &Arc<Counted>, lock: &Name, prefix: &str, n: usize) -> Vec<Waiter> {
        let before = store.tries();
        let waiters = (0..n)
            .map(|i| {
                let (store, lock, owner) =
                    (store.clone(), lock.clone(), name(&format!("{prefix}{i}")));
                tokio::spawn(async move {
                    acquire(&*store, &lock, &owner, 60_000, Duration::from_secs(10))
                        .await
                        .unwrap()
                })
            })
            .collect();
        store.until_tries(before + 2 * n).await;
        settle().await;
        waiters
    }

    fn answered(waiters: &[Waiter]) -> usize {
        waiters.iter().filter(|w| w.is_finished()).count()
    }

    async fn until_answered(waiters: &[Waiter], n: usize) {
        eventually("the acquisitions answered", || async {
            answered(waiters) >= n
        })
        .await;
    }

    /// Time for any other acquisition that was woken to try (a woken one tries at once).
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// The lock the one answered waiter got (and takes it out of `waiters`).
    async fn winner(waiters: &mut Vec<Waiter>) -> Lock {
        let at = waiters.iter().position(|w| w.is_finished()).unwrap();
        match waiters.remove(at).await.unwrap() {
            Attempt::Acquired(lock) => lock,
            held => panic!("answered without the lock: {held:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_release_wakes_one_waiting_acquisition_and_the_others_get_it_in_turn() {
        const WAITERS: usize = 20;
        let store = Counted::new();
        let lock = name("l");
        let mut holder = store.take(&lock, "first", 600_000).await;
        let mut waiting = waiters(&store, &lock, "w", WAITERS).await;
        let mut tokens = vec![holder.token];
        for n in 1..=WAITERS {
            let before = store.tries();
            assert!(store
                .lock_release(&lock, &holder.owner, holder.token)
                .await
                .unwrap());
            until_answered(&waiting, 1).await;
            settle().await;
            assert_eq!(
                answered(&waiting),
                1,
                "release {n}: one acquisition answered"
            );
            let tries = store.tries() - before;
            assert!(tries <= 2, "release {n} took {tries} attempts");
            holder = winner(&mut waiting).await;
            tokens.push(holder.token);
        }
        assert!(tokens.windows(2).all(|t| t[0] < t[1]), "{tokens:?}");
    }

    /// A lease ends when the store's clock passes it, to the millisecond, with no waiting.
    #[tokio::test]
    async fn a_lease_ends_when_the_store_clock_passes_it() {
        let mut settings = crate::settings::Settings::defaults();
        settings.clock = crate::clock::Clock::manual(std::time::SystemTime::now());
        let store = MemoryStore::new(&settings);
        let lock = name("clock");
        let first = store.lock_acquire(&lock, &name("a"), 1_000).await.unwrap();
        assert!(matches!(first, Attempt::Acquired(_)), "{first:?}");
        store.clock().advance(Duration::from_millis(999));
        assert!(store.lock_inspect(&lock).await.unwrap().is_some());
        let refused = store.lock_acquire(&lock, &name("b"), 1_000).await.unwrap();
        assert!(
            matches!(refused, Attempt::Held { retry_after_ms: 1 }),
            "{refused:?}"
        );
        store.clock().advance(Duration::from_millis(1));
        assert!(store.lock_inspect(&lock).await.unwrap().is_none());
        let second = store.lock_acquire(&lock, &name("b"), 1_000).await.unwrap();
        assert!(matches!(second, Attempt::Acquired(_)), "{second:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_that_runs_out_wakes_one_waiting_acquisition() {
        let store = Counted::new();
        let lock = name("e");
        store.take(&lock, "first", 1_000).await;
        let waiting = waiters(&store, &lock, "w", 10).await;
        let before = store.tries();
        until_answered(&waiting, 1).await;
        settle().await;
        assert_eq!(answered(&waiting), 1);
        let tries = store.tries() - before;
        assert!(tries <= 2, "{tries} attempts at the lease's end");
        for w in waiting {
            w.abort();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_woken_acquisition_that_goes_away_hands_its_turn_on() {
        let store = Counted::new();
        let lock = name("g");
        let holder = store.take(&lock, "first", 600_000).await;
        // The first to wait is the first woken.
        let first = waiters(&store, &lock, "a", 1).await.remove(0);
        let others = waiters(&store, &lock, "b", 10).await;
        let before = store.tries();
        store.stall_next.store(true, Ordering::SeqCst);
        assert!(store
            .lock_release(&lock, &holder.owner, holder.token)
            .await
            .unwrap());
        // The woken acquisition is stuck in its attempt; its client goes away.
        eventually("an acquisition was woken", || async {
            !store.stall_next.load(Ordering::SeqCst)
        })
        .await;
        first.abort();
        // Another one tries in its place, well before the 10 s waits end, and only one.
        until_answered(&others, 1).await;
        settle().await;
        assert_eq!(answered(&others), 1);
        let tries = store.tries() - before;
        assert!(tries <= 2, "{tries} attempts");
        for w in others {
            w.abort();
        }
    }
}
