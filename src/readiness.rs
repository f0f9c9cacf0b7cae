//! The store probe behind `/readyz` and `/metrics`: at most one a second, its answer shared.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::store::{ReadyInfo, Store, StoreError};

/// What `/readyz` reports: the store's answer, and the Bloom engine its dedup filters get.
#[derive(Debug, Clone)]
pub struct Ready {
    pub store: ReadyInfo,
    pub bloom_engine: &'static str,
}

/// How often the store is probed at most, whatever the callers do (docs/operations.md "Probes").
const PROBE_PERIOD: Duration = Duration::from_secs(1);

/// The store probe behind `/readyz` and `/metrics`. Both are exempt from the limiter, so
/// without this anyone could have the gateway run `INFO` on Redis as fast as they can send
/// requests; instead one probe runs at a time, at most one starts per second, and every caller
/// meanwhile shares its answer — a 503 as much as a 200.
#[derive(Debug, Default)]
pub struct ReadyProbe {
    last: Mutex<Option<Round>>,
}

/// One probe: when it started, and its answer once it has one.
#[derive(Debug)]
struct Round {
    started: Instant,
    answer: watch::Receiver<Option<Result<Ready, StoreError>>>,
}

impl Round {
    /// Whether callers should take this round's answer rather than start another probe.
    fn shareable(&self) -> bool {
        let answered = self.answer.borrow().is_some();
        if answered {
            self.started.elapsed() < PROBE_PERIOD
        } else {
            // In flight, unless its task died without answering (then nothing would ever come).
            self.answer.has_changed().is_ok()
        }
    }
}

/// The store's readiness, with the Bloom engine its dedup filters get.
async fn probe(store: &Store) -> Result<Ready, StoreError> {
    use crate::dedup::DedupStore;
    Ok(Ready {
        store: store.ready().await?,
        bloom_engine: store.dedup_engine().await?.as_str(),
    })
}

impl ReadyProbe {
    /// Whether the store answers, as of at most about a second ago.
    pub async fn check(&self, store: &Store) -> Result<Ready, StoreError> {
        let mut answer = {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            match &*last {
                Some(round) if round.shareable() => round.answer.clone(),
                _ => {
                    let (tx, rx) = watch::channel(None);
                    let store = store.clone();
                    // A task of its own, so a caller that hangs up does not cancel the probe
                    // the others wait for (and so cannot make the next caller start another).
                    tokio::spawn(async move {
                        let _ = tx.send(Some(probe(&store).await));
                    });
                    *last = Some(Round {
                        started: Instant::now(),
                        answer: rx.clone(),
                    });
                    rx
                }
            }
        };
        let answered = match answer.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone(),
            Err(_) => None,
        };
        // `None` only when the probe's task ended without an answer (a panic, or the runtime
        // going away).
        answered.unwrap_or_else(|| {
            Err(StoreError::Unavailable(
                "the readiness probe ended without an answer".to_owned(),
            ))
        })
    }
}
