//! Serving before the store answers (docs/operations.md "Probes"). The gateway listens from
//! its first milliseconds whatever the store does: `/healthz` answers 200 at once, so a
//! liveness probe never restarts a gateway that only waits for Redis. Until the store has been
//! reached once, and what every request reads from it is loaded (the runtime limit
//! overrides), the API answers 503 `backend_unavailable` with `Retry-After` without trying the
//! store, and `/readyz` 503 with the reason — neither waits on a connection that is not there.
//! From then on an outage is answered as any other (docs/operations.md "Redis"): the gate
//! never closes again.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::store::{Store, StoreError};

/// Whether the store has been reached since start-up; reaching it runs in a task of its own.
#[derive(Debug)]
pub struct Startup {
    reached: Arc<AtomicBool>,
    /// Ended with the state that owns it: a gateway stopped before Redis ever answered
    /// (in-process, in tests) must not keep trying.
    task: Option<tokio::task::AbortHandle>,
}

impl Startup {
    /// Starts reaching `store` in the background; the memory store is reached already. `then`
    /// runs once it answers, before the first request is let through: what every request reads
    /// from the store (the limit overrides, so that a deny or a tighter budget set at run time
    /// holds from the first request on).
    pub(crate) fn begin(store: &Store, then: impl Future<Output = ()> + Send + 'static) -> Self {
        if let Store::Memory(_) = store {
            return Self {
                reached: Arc::new(AtomicBool::new(true)),
                task: None,
            };
        }
        let reached = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn({
            let (reached, store) = (reached.clone(), store.clone());
            async move {
                store.reached().await;
                then.await;
                reached.store(true, Ordering::Release);
            }
        });
        Self {
            reached,
            task: Some(task.abort_handle()),
        }
    }

    /// `Ok` once the store has been reached, else why not yet, at once.
    pub fn check(&self, store: &Store) -> Result<(), StoreError> {
        answer(&self.reached, store)
    }

    /// The same check, for a layer that outlives no state: it does not keep the reaching task
    /// alive (only [`Startup`] ends it).
    pub fn gate(&self, store: &Store) -> Gate {
        Gate {
            reached: self.reached.clone(),
            store: store.clone(),
        }
    }
}

/// Whether the store has been reached, as [`Startup::check`] says; cheap to clone.
#[derive(Debug, Clone)]
pub struct Gate {
    reached: Arc<AtomicBool>,
    store: Store,
}

impl Gate {
    /// `Ok` once the store has been reached, else why not yet, at once.
    pub fn check(&self) -> Result<(), StoreError> {
        answer(&self.reached, &self.store)
    }
}

/// `Ok` once `reached`, else why not yet: one atomic load, no store call.
fn answer(reached: &AtomicBool, store: &Store) -> Result<(), StoreError> {
    if reached.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(store.unreached())
    }
}

impl Drop for Startup {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
