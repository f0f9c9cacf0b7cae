//! Group commit for the global limiter's store calls. While one client's call is in flight,
//! that client's next requests queue here and go to the store together in the next call
//! ([`RateLimitStore::ratelimit_throttle_many`], one script run). A quiet client's request
//! goes at once, as before; a busy client costs one round trip per batch instead of one per
//! request — that second round trip per request was why the global layer halved throughput
//! (issue 19). The decisions stay exact and shared by every instance: a batch's steps are
//! taken in arrival order, atomically, at one instant of the store's clock, which is what the
//! same requests would get had they arrived together.
//!
//! Written here because no crate does this for a store call: the pattern is small (a map of
//! queues under a mutex that is never held across an await), and its edges need care — a
//! request whose client leaves while it leads, or just as the lead reaches it. A lead is a
//! value ([`Lead`]) that passes itself on when dropped, so a bucket never stays busy with
//! nobody leading, and the requests it carried go back to the front of the queue: they are
//! decided by the next call rather than failed (which, failing open, would serve them free).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::ratelimit::logic::{Decision, Gcra};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::error::StoreError;

/// Most steps in one call: bounds the script's work (well inside the 5 ms rule) and the
/// latency a request queued at the back of a burst sees.
const MAX_BATCH: usize = 64;

type Reply = Result<Decision, StoreError>;

/// What a queued request learns.
enum Turn {
    /// Its decision, from a batch someone else sent.
    Decided(Reply),
    /// It sends the next batch: its own step, then the lead's followers.
    Lead(Lead),
}

struct Waiter {
    quantity: u64,
    tx: oneshot::Sender<Turn>,
}

/// A bucket and the budget it is spent under: a clients-file reload may change a client's
/// limits while its requests queue, and one batch is one budget.
type QueueKey = (String, i128, i128);

#[derive(Default)]
pub struct Batcher {
    /// A bucket has an entry while someone leads it; the entry holds who waits.
    queues: Mutex<HashMap<QueueKey, Vec<Waiter>>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

/// The right to send a bucket's next call, with the requests that call decides besides the
/// holder's own. Dropped — used, or with its holder gone — it passes itself on.
struct Lead {
    batcher: Arc<Batcher>,
    key: QueueKey,
    followers: Vec<Waiter>,
    /// `false` once its followers and its turn have been handed on by hand.
    live: bool,
}

impl Drop for Lead {
    fn drop(&mut self) {
        if self.live {
            let back = std::mem::take(&mut self.followers);
            self.batcher.pass_on(&self.key, back);
        }
    }
}

impl Batcher {
    /// One GCRA step of `quantity` on `client`'s bucket, batched with the steps of the same
    /// bucket that arrive while a call for it is in flight.
    pub async fn throttle(
        self: &Arc<Self>,
        store: &impl RateLimitStore,
        client: &str,
        gcra: &Gcra,
        quantity: u64,
    ) -> Reply {
        let key = (client.to_owned(), gcra.emission, gcra.tolerance);
        let waiting = {
            let mut queues = self.queues();
            match queues.get_mut(&key) {
                Some(queue) => {
                    let (tx, rx) = oneshot::channel();
                    queue.push(Waiter { quantity, tx });
                    Some(rx)
                }
                None => {
                    queues.insert(key.clone(), Vec::new());
                    None
                }
            }
        };
        let mut lead = match waiting {
            None => Lead {
                batcher: self.clone(),
                key,
                followers: Vec::new(),
                live: true,
            },
            Some(rx) => match rx.await {
                Ok(Turn::Decided(reply)) => return reply,
                Ok(Turn::Lead(lead)) => lead,
                // Every waiter is answered, led or put back; only a teardown gets here.
                Err(_) => {
                    return Err(StoreError::Unavailable(
                        "the limiter is shutting down".to_owned(),
                    ))
                }
            },
        };
        let bucket = Bucket::Client(client.to_owned());
        let replies = if lead.followers.is_empty() {
            store
                .ratelimit_throttle(&bucket, gcra, quantity)
                .await
                .map(|d| vec![d])
        } else {
            let quantities: Vec<u64> = std::iter::once(quantity)
                .chain(lead.followers.iter().map(|w| w.quantity))
                .collect();
            store
                .ratelimit_throttle_many(&bucket, gcra, &quantities)
                .await
        };
        // Pass the lead on before answering, so the next batch starts now.
        let followers = std::mem::take(&mut lead.followers);
        drop(lead);
        match replies {
            Ok(decisions) => {
                let mut decisions = decisions.into_iter();
                let own = decisions.next().ok_or_else(|| {
                    StoreError::Internal("a limiter batch came back empty".to_owned())
                });
                for (waiter, decision) in followers.into_iter().zip(decisions) {
                    // A follower whose client left has dropped its receiver: nothing to do.
                    let _ = waiter.tx.send(Turn::Decided(Ok(decision)));
                }
                own
            }
            Err(e) => {
                for waiter in followers {
                    let _ = waiter.tx.send(Turn::Decided(Err(e.clone())));
                }
                Err(e)
            }
        }
    }

    /// Hands `key`'s lead to the first request queued (with up to [`MAX_BATCH`] − 1 behind
    /// it), after putting `back` at the front of the queue; with nobody queued the bucket is
    /// idle again.
    fn pass_on(self: &Arc<Self>, key: &QueueKey, mut back: Vec<Waiter>) {
        loop {
            let (next, followers) = {
                let mut queues = self.queues();
                let Some(queue) = queues.get_mut(key) else {
                    return;
                };
                queue.splice(0..0, back.drain(..));
                if queue.is_empty() {
                    queues.remove(key);
                    return;
                }
                let take = queue.len().min(MAX_BATCH);
                let mut batch: Vec<Waiter> = queue.drain(..take).collect();
                let next = batch.remove(0);
                (next, batch)
            };
            // Sent outside the lock: a refused lead comes back and is taken apart here, and a
            // lead dropped unread by its receiver passes itself on from there.
            let lead = Lead {
                batcher: self.clone(),
                key: key.clone(),
                followers,
                live: true,
            };
            match next.tx.send(Turn::Lead(lead)) {
                Ok(()) => return,
                Err(Turn::Lead(mut refused)) => {
                    refused.live = false;
                    back = std::mem::take(&mut refused.followers);
                }
                Err(Turn::Decided(_)) => return,
            }
        }
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<QueueKey, Vec<Waiter>>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
