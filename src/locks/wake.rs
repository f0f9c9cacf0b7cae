//! Release wake-ups for waiting acquirers, shared by both backends: a waiter registers a
//! [`Watch`] for a name before it tries, and whoever learns of a release (the memory backend
//! itself, or the Redis backend's pub/sub subscriber) calls [`Wakeups::wake`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

/// Names with waiters in this process → a counter bumped on each release.
#[derive(Debug, Default)]
pub struct Wakeups {
    names: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Wakeups {
    /// A watch that fires on the next release of `name` after this call.
    pub fn watch(self: &Arc<Self>, name: &str) -> Watch {
        let mut names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let rx = names
            .entry(name.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Watch {
            rx: Some(rx),
            from: Some((Arc::downgrade(self), name.to_owned())),
            on_drop: None,
        }
    }

    /// Wakes every watch of `name` in this process.
    pub fn wake(&self, name: &str) {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = names.get(name) {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

impl Wakeups {
    /// Wakes every watch in this process (when releases may have been missed).
    pub fn wake_all(&self) {
        let names = self.names.lock().unwrap_or_else(|e| e.into_inner());
        for tx in names.values() {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// One waiter's registration; dropping it forgets the name once nobody waits for it.
pub struct Watch {
    rx: Option<watch::Receiver<u64>>,
    from: Option<(Weak<Wakeups>, String)>,
    /// What the backend does when the waiter is gone (the Redis backend: unsubscribe).
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("from", &self.from).finish()
    }
}

impl Watch {
    /// A watch that never fires (no waiting, or no way to hear of releases): the waiter then
    /// relies on the lease's end alone.
    pub fn never() -> Self {
        Self {
            rx: None,
            from: None,
            on_drop: None,
        }
    }

    /// Runs `f` when this watch is dropped.
    pub fn on_drop(mut self, f: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_drop = Some(Box::new(f));
        self
    }

    /// Resolves once a release happened after the watch was made.
    pub async fn released(&mut self) {
        match &mut self.rx {
            Some(rx) => {
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
        let Some((hub, name)) = self.from.take() else {
            return;
        };
        self.rx = None;
        if let Some(hub) = hub.upgrade() {
            let mut names = hub.names.lock().unwrap_or_else(|e| e.into_inner());
            if names.get(&name).is_some_and(|tx| tx.receiver_count() == 0) {
                names.remove(&name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_release_after_the_watch_wakes_it_and_names_are_forgotten() {
        let hub = Arc::new(Wakeups::default());
        let mut w = hub.watch("a");
        hub.wake("b");
        hub.wake("a");
        tokio::time::timeout(std::time::Duration::from_secs(5), w.released())
            .await
            .expect("woken");
        drop(w);
        assert!(hub.names.lock().unwrap().is_empty());
    }
}
