//! Per-thread relays of the feeds. Each worker thread runs its own single-threaded runtime
//! (src/workers.rs), and a task woken from another thread costs that thread's runtime a system
//! call (its driver's wake-up) per task. So a feed's clients do not watch it directly: each
//! thread has one relay per feed, woken once per change, which hands the change on to that
//! thread's clients with wake-ups that stay on the thread (measured with `strace -c` over 2,000
//! streams on two workers: 106,514 `write`s to the other thread's wake-up descriptor in a round
//! of purchases before, 516 after; the CPU per event moved within the bench's noise, the
//! sockets' own writes being most of it; see
//! docs/performance.md "Live events (10,000 streams on one voucher)").

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

use tokio::sync::watch;

/// Each thread's relay of each feed: what it hands that thread's clients, and a view of the
/// feed it relays (a feed that ended, the store lost, is started again by its next client: a
/// relay of the old one is not reused).
pub(super) struct Relays<K, T> {
    open: Mutex<HashMap<Here<K>, Relay<T>>>,
}

/// A feed's key on one thread.
type Here<K> = (K, ThreadId);

/// What a relay hands its thread's clients, and a view of the feed it relays.
type Relay<T> = (watch::Sender<T>, watch::Receiver<T>);

impl<K, T> Default for Relays<K, T> {
    fn default() -> Self {
        Self {
            open: Mutex::default(),
        }
    }
}

impl<K, T> std::fmt::Debug for Relays<K, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relays").finish_non_exhaustive()
    }
}

fn lock<V>(m: &Mutex<V>) -> std::sync::MutexGuard<'_, V> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<K, T> Relays<K, T>
where
    K: Eq + Hash + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    /// This thread's view of `key`'s feed `up`: its relay's, started here if it has none.
    pub(super) fn view(self: &Arc<Self>, key: &K, up: watch::Receiver<T>) -> watch::Receiver<T> {
        let here = (key.clone(), std::thread::current().id());
        let mut open = lock(&self.open);
        if let Some((down, of)) = open.get(&here) {
            if of.same_channel(&up) {
                return down.subscribe();
            }
        }
        let (down, rx) = watch::channel(up.borrow().clone());
        open.insert(here.clone(), (down.clone(), up.clone()));
        tokio::spawn(relay(Arc::downgrade(self), here, up, down));
        rx
    }

    /// Drops the relay `here` if it is `down`: only when nobody watches it, unless `anyway`.
    /// Whether it did.
    fn close(&self, here: &Here<K>, down: &watch::Sender<T>, anyway: bool) -> bool {
        let mut open = lock(&self.open);
        if !anyway && down.receiver_count() > 0 {
            return false;
        }
        if open.get(here).is_some_and(|(d, _)| d.same_channel(down)) {
            open.remove(here);
        }
        true
    }
}

/// One thread's relay of a feed: hands each change of `up` to `down`, whose clients are this
/// thread's; ends with its last client (dropping its place in the feed) or with the feed.
async fn relay<K, T>(
    relays: Weak<Relays<K, T>>,
    here: Here<K>,
    mut up: watch::Receiver<T>,
    down: watch::Sender<T>,
) where
    K: Eq + Hash + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    loop {
        tokio::select! {
            changed = up.changed() => {
                if changed.is_err() {
                    // The feed ended: its last state (the store lost, say) was handed on.
                    if let Some(relays) = relays.upgrade() {
                        relays.close(&here, &down, true);
                    }
                    return;
                }
                let now = up.borrow_and_update().clone();
                down.send_replace(now);
            }
            () = down.closed() => {
                if relays.upgrade().is_none_or(|r| r.close(&here, &down, false)) {
                    return;
                }
            }
        }
    }
}
