//! The store probe behind `/readyz` and `/metrics`: at most one a second, its answer shared,
//! with what each domain that asks to be heard adds to it ([`ReadyFact`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::store::{ReadyInfo, Store, StoreError};

/// What `/readyz` reports: the store's answer, and each [`ReadyFact`] by its name.
#[derive(Debug, Clone)]
pub struct Ready {
    pub store: ReadyInfo,
    pub facts: Vec<(&'static str, &'static str)>,
}

impl Ready {
    /// The fact reported under `name`, if a domain reports one.
    pub fn fact(&self, name: &str) -> Option<&'static str> {
        self.facts.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// What a domain adds to each probe: a fact about this store that operators read from
/// `/readyz` and the `gateway_info` metric (as the Bloom engine a new filter gets). The probe
/// asks every fact it was given, so it names no domain.
pub trait ReadyFact: Send + Sync + std::fmt::Debug {
    /// The name it is reported under: a `/readyz` field and a `gateway_info` label.
    fn name(&self) -> &'static str;
    /// Its value on `store`, asked at most once a second.
    fn probe<'a>(&'a self, store: &'a Store) -> BoxFuture<'a, Result<&'static str, StoreError>>;
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
    facts: Arc<[Box<dyn ReadyFact>]>,
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

/// The store's readiness, with each fact's value.
async fn probe(store: &Store, facts: &[Box<dyn ReadyFact>]) -> Result<Ready, StoreError> {
    let info = store.ready().await?;
    let mut values = Vec::with_capacity(facts.len());
    for fact in facts {
        values.push((fact.name(), fact.probe(store).await?));
    }
    Ok(Ready {
        store: info,
        facts: values,
    })
}

impl ReadyProbe {
    /// A probe that asks the store, then each of `facts`.
    pub fn new(facts: Vec<Box<dyn ReadyFact>>) -> Self {
        Self {
            last: Mutex::default(),
            facts: facts.into(),
        }
    }

    /// Whether the store answers, as of at most about a second ago.
    pub async fn check(&self, store: &Store) -> Result<Ready, StoreError> {
        let mut answer = {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            match &*last {
                Some(round) if round.shareable() => round.answer.clone(),
                _ => {
                    let (tx, rx) = watch::channel(None);
                    let (store, facts) = (store.clone(), self.facts.clone());
                    // A task of its own, so a caller that hangs up does not cancel the probe
                    // the others wait for (and so cannot make the next caller start another).
                    tokio::spawn(async move {
                        let _ = tx.send(Some(probe(&store, &facts).await));
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
