//! Group commit for the global limiter's store calls (`store::group`): the requests for one
//! client's bucket that a worker thread takes up in one turn of its event loop go to the store
//! together, in one call ([`BudgetStore::budget_spend_many`], one script run): a busy
//! client costs one round trip per batch instead of one per request — that second round trip
//! per request was why the global layer halved throughput. The decisions stay exact
//! and shared by every instance: a batch's steps are taken in arrival order, atomically, at one
//! instant of the store's clock, which is what the same requests would get had they arrived
//! together.
//!
//! A client the store has just refused is answered by the worker itself for a while
//! ([`Refusals`]), with no call at all.

use std::sync::Arc;
use std::time::Instant;

use super::refusals::Refusals;
use crate::gcra::{Decision, Gcra};
use crate::policies::budget::BudgetStore;
use crate::store::error::StoreError;
use crate::store::group::GroupCommit;
use crate::store::Store;

/// Most steps in one call: bounds the script's work (well inside the 5 ms rule). A larger
/// batch goes as several calls, one after the other.
const MAX_BATCH: usize = 64;

type Reply = Result<Decision, StoreError>;

/// A bucket and the budget it is spent under: a clients-file reload may change a client's
/// limits while its requests queue, and one batch is one budget.
type QueueKey = (String, Gcra);

#[derive(Debug)]
pub struct Batcher {
    open: GroupCommit<QueueKey, u64, Reply>,
    to: Arc<Target>,
}

/// Where a batch goes, and who learns from its answer.
#[derive(Debug)]
struct Target {
    store: Store,
    refusals: Refusals,
}

impl Batcher {
    pub fn new(store: Store) -> Self {
        Self {
            open: GroupCommit::default(),
            to: Arc::new(Target {
                store,
                refusals: Refusals::default(),
            }),
        }
    }

    /// The store's refusal of `quantity` units of `client`'s bucket under `gcra`, when this
    /// worker knows it already ([`Refusals`]); `None`: ask the store.
    pub fn known_refusal(&self, client: &str, gcra: &Gcra, quantity: u64) -> Option<Decision> {
        self.to.refusals.answer(client, gcra, quantity)
    }

    /// One GCRA step of `quantity` on `client`'s bucket, batched with the steps of the same
    /// bucket this thread takes up in the same turn.
    pub async fn throttle(&self, client: &str, gcra: &Gcra, quantity: u64) -> Reply {
        if let Some(refused) = self.to.refusals.answer(client, gcra, quantity) {
            return Ok(refused);
        }
        let key = (client.to_owned(), *gcra);
        self.open
            .join(key, quantity, &self.to, send)
            .await
            .unwrap_or_else(|| {
                // Only a runtime shutting down drops the sending task before it answers.
                Err(StoreError::Unavailable(
                    "the limiter is shutting down".to_owned(),
                ))
            })
    }
}

/// Decides one batch, a call per [`MAX_BATCH`] steps (a request whose client left has still
/// spent its step: it was sent).
async fn send(to: Arc<Target>, key: QueueKey, quantities: Vec<u64>) -> Vec<Reply> {
    let (client, gcra) = key;
    let store = &to.store;
    let mut replies = Vec::with_capacity(quantities.len());
    // When the last call was sent: its answer is the bucket's newest state.
    let mut asked = None;
    for part in quantities.chunks(MAX_BATCH) {
        asked = Some(Instant::now());
        let decided = if let [one] = part {
            store
                .budget_spend(&client, &gcra, *one)
                .await
                .map(|d| vec![d])
        } else {
            store.budget_spend_many(&client, &gcra, part).await
        };
        match decided {
            Ok(decisions) if decisions.len() == part.len() => {
                replies.extend(decisions.into_iter().map(Ok))
            }
            Ok(_) => {
                let e = StoreError::Internal(
                    "a limiter batch came back with the wrong number of decisions".to_owned(),
                );
                replies.extend(part.iter().map(|_| Err(e.clone())))
            }
            Err(e) => replies.extend(part.iter().map(|_| Err(e.clone()))),
        }
    }
    if let (Some(asked), Some(Ok(last))) = (asked, replies.last()) {
        to.refusals.learn(&client, &gcra, asked, last);
    }
    replies
}
