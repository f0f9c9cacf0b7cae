//! Group commit for the global limiter's store calls. The requests for one client's bucket
//! that a worker thread takes up in one turn of its event loop go to the store together, in
//! one call ([`RateLimitStore::ratelimit_throttle_many`], one script run): a busy client costs
//! one round trip per batch instead of one per request — that second round trip per request
//! was why the global layer halved throughput (issue 19). The decisions stay exact and shared
//! by every instance: a batch's steps are taken in arrival order, atomically, at one instant of
//! the store's clock, which is what the same requests would get had they arrived together.
//!
//! Batches form per worker thread and are not held back while an earlier one is in flight:
//! each worker runs its own single-threaded runtime with its own Redis connections
//! (`src/workers.rs`), so a batch shared across workers cost a cross-thread wake-up per
//! request, and waiting for the call in flight before sending the next added up to a second
//! round trip to every request's latency. Two batches of one bucket in flight at once are
//! two atomic script runs, as two gateway instances' calls are.
//!
//! The first request of a bucket in a turn opens the batch and spawns the task that sends it.
//! A spawned task runs after the tasks already woken in the same turn, so those join the
//! batch; and since it belongs to no request, a client that gives up cannot strand the
//! requests that joined its batch. Written here because no crate does this for a store call.

use std::sync::{Arc, Mutex, PoisonError};

use thread_local::ThreadLocal;
use tokio::sync::oneshot;

use crate::middleware::FastMap;
use crate::ratelimit::logic::{Decision, Gcra};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::error::StoreError;
use crate::store::Store;

/// Most steps in one call: bounds the script's work (well inside the 5 ms rule). A larger
/// batch goes as several calls, one after the other.
const MAX_BATCH: usize = 64;

type Reply = Result<Decision, StoreError>;

struct Waiter {
    quantity: u64,
    tx: oneshot::Sender<Reply>,
}

/// A bucket and the budget it is spent under: a clients-file reload may change a client's
/// limits while its requests queue, and one batch is one budget.
type QueueKey = (String, i128, i128);

/// One thread's open batches: a bucket has an entry from its first request of a turn until
/// the task sending the batch takes it.
type Open = Arc<Mutex<FastMap<QueueKey, Vec<Waiter>>>>;

#[derive(Default)]
pub struct Batcher {
    open: ThreadLocal<Open>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl Batcher {
    /// One GCRA step of `quantity` on `client`'s bucket, batched with the steps of the same
    /// bucket this thread takes up in the same turn.
    pub async fn throttle(&self, store: &Store, client: &str, gcra: &Gcra, quantity: u64) -> Reply {
        let key = (client.to_owned(), gcra.emission, gcra.tolerance);
        let (tx, rx) = oneshot::channel();
        let open = self.open.get_or_default();
        let first = {
            let mut batches = lock(open);
            match batches.get_mut(&key) {
                Some(batch) => {
                    batch.push(Waiter { quantity, tx });
                    false
                }
                None => {
                    batches.insert(key.clone(), vec![Waiter { quantity, tx }]);
                    true
                }
            }
        };
        if first {
            tokio::spawn(send(open.clone(), key, store.clone(), *gcra));
        }
        rx.await.unwrap_or_else(|_| {
            // Only a runtime shutting down drops the sending task before it answers.
            Err(StoreError::Unavailable(
                "the limiter is shutting down".to_owned(),
            ))
        })
    }
}

/// Takes `key`'s batch out of `open` and decides it, answering every request in it (one whose
/// client left has dropped its receiver: its step is still spent, as it was sent).
async fn send(open: Open, key: QueueKey, store: Store, gcra: Gcra) {
    let mut waiters = lock(&open).remove(&key).unwrap_or_default();
    let bucket = Bucket::Client(key.0);
    while !waiters.is_empty() {
        let rest = waiters.split_off(waiters.len().min(MAX_BATCH));
        let replies = if let [one] = waiters.as_slice() {
            store
                .ratelimit_throttle(&bucket, &gcra, one.quantity)
                .await
                .map(|d| vec![d])
        } else {
            let quantities: Vec<u64> = waiters.iter().map(|w| w.quantity).collect();
            store
                .ratelimit_throttle_many(&bucket, &gcra, &quantities)
                .await
        };
        match replies {
            Ok(decisions) if decisions.len() == waiters.len() => {
                for (waiter, decision) in waiters.into_iter().zip(decisions) {
                    let _ = waiter.tx.send(Ok(decision));
                }
            }
            Ok(_) => {
                let e = StoreError::Internal(
                    "a limiter batch came back with the wrong number of decisions".to_owned(),
                );
                for waiter in waiters {
                    let _ = waiter.tx.send(Err(e.clone()));
                }
            }
            Err(e) => {
                for waiter in waiters {
                    let _ = waiter.tx.send(Err(e.clone()));
                }
            }
        }
        waiters = rest;
    }
}

fn lock(open: &Open) -> std::sync::MutexGuard<'_, FastMap<QueueKey, Vec<Waiter>>> {
    open.lock().unwrap_or_else(PoisonError::into_inner)
}
