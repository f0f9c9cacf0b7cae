//! Group commit for store calls: the requests for one key that a worker thread takes up in one
//! turn of its event loop go to the store together, in one call, and each gets its own answer
//! back. A busy key costs one round trip and one script run per batch instead of one per
//! request (the global limiter's bucket, a page's UV add).
//!
//! Batches form per worker thread and are not held back while an earlier one is in flight:
//! each worker runs its own single-threaded runtime with its own Redis connections
//! (`src/workers.rs`), so a batch shared across workers would cost a cross-thread wake-up per
//! request, and waiting for the call in flight before sending the next would add a second
//! round trip to every request's latency. Two batches of one key in flight at once are two
//! atomic script runs, as two gateway instances' calls are.
//!
//! The first request for a key in a turn opens the batch and spawns the task that sends it. A
//! spawned task runs after the tasks already woken in the same turn, so those join the batch;
//! and since it belongs to no request, a client that gives up cannot strand the requests that
//! joined its batch (its own part is still sent: its outcome was unknown to it either way).
//! Written here because no crate does this for a store call.
//!
//! A batch is a [`stall`] scope of its own: once one of its calls timed out, its later calls
//! are not sent (a large batch waited one store timeout per call), and each request that
//! joined it learns of the timeout, so that its own later calls are not sent either (the
//! global limiter's charge is such a batch).

use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use thread_local::ThreadLocal;
use tokio::sync::oneshot;

use super::stall;

struct Waiter<T, R> {
    item: T,
    /// The answer, and whether a call of the batch timed out.
    tx: oneshot::Sender<(R, bool)>,
}

/// One thread's open batches: a key has an entry from its first request of a turn until the
/// task sending the batch takes it. foldhash: the keys are the server's own and live one turn.
type Open<K, T, R> = Arc<Mutex<foldhash::HashMap<K, Vec<Waiter<T, R>>>>>;

/// Open batches of items `T` by key `K`, answered with `R` each.
pub(crate) struct GroupCommit<K: Send, T: Send, R: Send> {
    open: ThreadLocal<Open<K, T, R>>,
}

impl<K, T, R> Default for GroupCommit<K, T, R>
where
    K: Send,
    T: Send,
    R: Send,
{
    fn default() -> Self {
        Self {
            open: ThreadLocal::new(),
        }
    }
}

// A backend keeps its open batches in a slot of its store.
impl<K: Send + 'static, T: Send + 'static, R: Send + 'static> super::slots::Kept
    for GroupCommit<K, T, R>
{
}

impl<K: Send, T: Send, R: Send> std::fmt::Debug for GroupCommit<K, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<K, T, R> GroupCommit<K, T, R>
where
    K: Hash + Eq + Clone + Send + 'static,
    T: Send + 'static,
    R: Send + 'static,
{
    /// Adds `item` to this thread's batch for `key` and waits for its answer. The request that
    /// opens the batch spawns `send(to, key, items)`, which must answer every item, in order.
    /// `None` only when the runtime shut down before the batch was answered.
    pub(crate) async fn join<S, F>(
        &self,
        key: K,
        item: T,
        to: &S,
        send: fn(S, K, Vec<T>) -> F,
    ) -> Option<R>
    where
        S: Clone + Send + 'static,
        F: Future<Output = Vec<R>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let open = self.open.get_or_default();
        let first = {
            let mut batches = lock(open);
            match batches.get_mut(&key) {
                Some(batch) => {
                    batch.push(Waiter { item, tx });
                    false
                }
                None => {
                    batches.insert(key.clone(), vec![Waiter { item, tx }]);
                    true
                }
            }
        };
        if first {
            let (open, to) = (open.clone(), to.clone());
            tokio::spawn(stall::scope(async move {
                let waiters = lock(&open).remove(&key).unwrap_or_default();
                let (items, txs): (Vec<T>, Vec<_>) =
                    waiters.into_iter().map(|w| (w.item, w.tx)).unzip();
                let replies = send(to, key, items).await;
                debug_assert_eq!(replies.len(), txs.len(), "a batch answers every item");
                let timed_out = stall::timed_out();
                for (tx, reply) in txs.into_iter().zip(replies) {
                    // A request whose client left has dropped its receiver.
                    let _ = tx.send((reply, timed_out));
                }
            }));
        }
        let (reply, timed_out) = rx.await.ok()?;
        if timed_out {
            stall::note_timeout();
        }
        Some(reply)
    }
}

/// Splits a batch into store calls of at most `max_items` items and `max_weight` in all, in
/// order (an item heavier than that goes alone), so each call's work stays bounded however
/// large the batch grew.
pub(crate) fn calls<T>(
    items: Vec<T>,
    max_items: usize,
    max_weight: usize,
    weight: impl Fn(&T) -> usize,
) -> Vec<Vec<T>> {
    let mut calls = Vec::new();
    let mut items = items.into_iter().peekable();
    while let Some(first) = items.next() {
        let mut total = weight(&first);
        let mut call = vec![first];
        while call.len() < max_items {
            let Some(next) = items.next_if(|i| total + weight(i) <= max_weight) else {
                break;
            };
            total += weight(&next);
            call.push(next);
        }
        calls.push(call);
    }
    calls
}

/// Sends `items` as [`calls`] by `send`, one call after the other so they stay in order; a
/// call that fails answers each of its items with its error.
pub(crate) async fn in_calls<T, A, E, Fut>(
    items: Vec<T>,
    max_items: usize,
    max_weight: usize,
    weight: impl Fn(&T) -> usize,
    mut send: impl FnMut(Vec<T>) -> Fut,
) -> Vec<Result<A, E>>
where
    E: Clone,
    Fut: Future<Output = Result<Vec<Result<A, E>>, E>>,
{
    let mut answers = Vec::with_capacity(items.len());
    for call in calls(items, max_items, max_weight, weight) {
        let n = call.len();
        match send(call).await {
            Ok(done) => answers.extend(done),
            Err(e) => answers.extend((0..n).map(|_| Err(e.clone()))),
        }
    }
    answers
}

fn lock<K, T, R>(
    open: &Open<K, T, R>,
) -> std::sync::MutexGuard<'_, foldhash::HashMap<K, Vec<Waiter<T, R>>>> {
    open.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::{calls, stall, GroupCommit};

    #[test]
    fn calls_are_bounded_by_count_and_weight_in_order() {
        let split = calls(vec![3, 4, 2, 9, 1, 1, 1], 2, 8, |w| *w);
        assert_eq!(
            split,
            vec![vec![3, 4], vec![2], vec![9], vec![1, 1], vec![1]]
        );
        assert!(calls(Vec::<usize>::new(), 2, 8, |w| *w).is_empty());
    }

    /// Two requests' items, one batch whose first call times out: its second call is not
    /// sent, and each request learns of the timeout; the batch starts clear of the first
    /// request's own.
    #[tokio::test]
    async fn a_batch_is_a_request_of_its_own_that_tells_its_requests() {
        async fn send(_: (), _: u8, items: Vec<u8>) -> Vec<Option<u8>> {
            assert!(!stall::timed_out(), "a batch starts clear");
            let mut answers = Vec::new();
            for item in items {
                if stall::timed_out() {
                    answers.push(None);
                    continue;
                }
                stall::note_timeout();
                answers.push(Some(item));
            }
            answers
        }
        let group = &GroupCommit::<u8, u8, Option<u8>>::default();
        let request = |item, timed_out: bool| {
            stall::scope(async move {
                if timed_out {
                    stall::note_timeout();
                }
                let answer = group.join(1, item, &(), send).await;
                (answer, stall::timed_out())
            })
        };
        let (a, b) = tokio::join!(request(10, true), request(20, false));
        assert_eq!((a, b), ((Some(Some(10)), true), (Some(None), true)));

        async fn clear(_: (), _: u8, items: Vec<u8>) -> Vec<Option<u8>> {
            items.into_iter().map(Some).collect()
        }
        let answered = stall::scope(async {
            let answer = group.join(2, 30, &(), clear).await;
            (answer, stall::timed_out())
        });
        assert_eq!(answered.await, (Some(Some(30)), false));
    }
}
