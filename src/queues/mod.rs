//! Delayed queues: jobs waiting in a sorted set scored by their due time, claimed atomically
//! (one job to one claimer) with a visibility timeout and a receipt, acked, cancelled, and
//! moved to a capped dead list once they used up `max_attempts`.
//!
//! The queue's clock is the store's (`TIME` in the Lua scripts, the process clock in memory).
//! Claiming is at-least-once: a claim that is not acked before its visibility deadline lapses,
//! and the job is due again with `attempts` kept (the next claim counts one more).
//!
//! Bounds (API.md "Clients and abuse"): a queue holds at most `GATEWAY_QUEUE_MAX_JOBS` live
//! jobs (waiting or in flight); its dead list keeps the newest [`MAX_DEAD`]; one claim moves
//! at most [`LAPSED_PER_CLAIM`] lapsed claims back and returns at most [`CLAIM_BYTES`] of
//! payloads (at least one job); a queue whose keys see no write expires [`IDLE_SECS`] after
//! its last due time or visibility deadline.

mod http;
pub mod logic;

pub use http::router;

use std::sync::Arc;
use std::time::Duration;

use crate::store::error::StoreError;
use crate::types::Name;
pub use crate::types::{Idempotency, Once, IDEMPOTENCY_SECS};

/// Largest serialized payload (API.md: 64 KiB).
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;
/// Dead jobs kept per queue; the oldest dead job goes when another dies past it.
pub const MAX_DEAD: u64 = 1000;
/// Lapsed claims one claim call moves back to the waiting set (the rest on later calls).
pub const LAPSED_PER_CLAIM: u32 = 100;
/// Payload bytes one claim or one dead-list page returns at most (but always one job).
pub const CLAIM_BYTES: u64 = 1024 * 1024;
/// Jobs one claim call examines at most beyond `max` (those it sends to the dead list).
pub const DEAD_PER_CLAIM: u32 = 100;
/// A queue's keys expire this long after the later of their last write and the latest due
/// time or visibility deadline they hold: an abandoned queue disappears, a delayed job never
/// does before it is due.
pub const IDLE_SECS: u64 = 7 * 86_400;

/// When a new job becomes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// This many ms after the store's now.
    In(u64),
    /// At this unix ms.
    At(i64),
}

/// A job to enqueue; `payload` is its serialized JSON (at most [`MAX_PAYLOAD_BYTES`]).
#[derive(Debug, Clone)]
pub struct NewJob {
    pub id: Name,
    pub payload: String,
    pub due: Due,
    /// 1..=[`logic::MAX_ATTEMPTS`].
    pub max_attempts: u32,
}

/// What an enqueue came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// A new job due at `run_at` (unix ms).
    Created { id: Name, run_at: i64 },
    /// A job with this id exists already (waiting, in flight or dead): nothing changed.
    Existing { id: Name, run_at: i64 },
    /// The queue holds `GATEWAY_QUEUE_MAX_JOBS` live jobs: nothing changed.
    Full,
}

/// A claimed job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub id: Name,
    /// Serialized JSON, as enqueued.
    pub payload: String,
    pub run_at: i64,
    /// Claims so far, this one included.
    pub attempts: u32,
    /// What acks this claim; a later claim of the same job has another.
    pub receipt: String,
}

/// One claim call's result.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    pub jobs: Vec<Claimed>,
    /// Ms from the store's now until the earliest due time or visibility deadline in the
    /// queue, when there is one: when a long poll should look again.
    pub next_in_ms: Option<u64>,
}

/// What an ack did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked {
    Done,
    /// The receipt is not the job's current claim, the claim lapsed, or the job is gone.
    Expired,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    Done,
    NotFound,
    /// Claimed and its visibility deadline has not passed.
    InFlight,
}

/// A queue's counts by the store's clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Waiting, not yet due.
    pub delayed: u64,
    /// Due (including lapsed claims not yet taken again).
    pub ready: u64,
    /// Claimed, visibility deadline not passed.
    pub in_flight: u64,
    pub dead: u64,
}

/// A job on the dead list; `seq` orders the list and is the page cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadJob {
    pub seq: u64,
    pub id: Name,
    pub payload: String,
    pub run_at: i64,
    pub attempts: u32,
}

/// Rung after each enqueue, so a long-polling claim looks again at once instead of waiting
/// for its next re-check.
#[derive(Debug, Clone)]
pub struct Bell {
    pub notify: Arc<tokio::sync::Notify>,
    /// Longest a waiting claim sleeps between looks when enqueues may arrive unseen (through
    /// another gateway instance); `None` when every enqueue rings this bell.
    pub recheck: Option<Duration>,
}

/// What a queue backend must do. Every method but [`Self::queue_bell`] is one atomic store
/// operation.
pub(crate) trait QueueStore {
    /// Adds `job` unless its id exists (then reports that job) or the queue holds `max_jobs`
    /// live jobs. Under `idem`, the same step looks for the key's earlier outcome and records
    /// this one (not a full queue's, where nothing happened).
    async fn queue_enqueue(
        &self,
        queue: &Name,
        job: &NewJob,
        max_jobs: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Enqueued>, StoreError>;
    /// Moves lapsed claims back (at most [`LAPSED_PER_CLAIM`]), then claims up to `max` due
    /// jobs oldest first for `visibility_ms`, sending those that used up their attempts to
    /// the dead list instead.
    async fn queue_claim(
        &self,
        queue: &Name,
        max: u32,
        visibility_ms: u64,
    ) -> Result<Claim, StoreError>;
    async fn queue_ack(&self, queue: &Name, id: &Name, receipt: &str) -> Result<Acked, StoreError>;
    async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError>;
    async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError>;
    /// Up to `limit` dead jobs after `after`, oldest death first, stopping early past
    /// [`CLAIM_BYTES`] of payloads.
    async fn queue_dead(
        &self,
        queue: &Name,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<DeadJob>, StoreError>;
    /// The bell enqueues to `queue` ring.
    fn queue_bell(&self, queue: &Name) -> Bell;
}

/// Per-queue bells of one store, held weakly: a queue nobody waits on costs nothing.
#[derive(Debug, Default)]
pub struct Bells {
    bells: std::sync::Mutex<std::collections::HashMap<Name, std::sync::Weak<tokio::sync::Notify>>>,
}

impl Bells {
    /// The bell of `queue`, made when nobody holds it.
    pub fn get(&self, queue: &Name) -> Arc<tokio::sync::Notify> {
        let mut bells = self
            .bells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(bell) = bells.get(queue).and_then(std::sync::Weak::upgrade) {
            return bell;
        }
        if bells.len() >= 1024 {
            bells.retain(|_, b| b.strong_count() > 0);
        }
        let bell = Arc::new(tokio::sync::Notify::new());
        bells.insert(queue.clone(), Arc::downgrade(&bell));
        bell
    }

    /// Wakes every claim waiting on `queue`.
    pub fn ring(&self, queue: &Name) {
        let bell = self
            .bells
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(queue)
            .and_then(std::sync::Weak::upgrade);
        if let Some(bell) = bell {
            bell.notify_waiters();
        }
    }
}

/// Claims like [`QueueStore::queue_claim`], and when nothing is due waits up to `wait` for a
/// job: it looks again when the earliest due time or visibility deadline arrives, when an
/// enqueue rings the queue's bell, or at the bell's re-check interval, whichever is first.
pub(crate) async fn claim_waiting<S: QueueStore>(
    store: &S,
    queue: &Name,
    max: u32,
    visibility_ms: u64,
    wait: Duration,
) -> Result<Vec<Claimed>, StoreError> {
    let deadline = tokio::time::Instant::now() + wait;
    let bell = store.queue_bell(queue);
    loop {
        // Made before the look, so an enqueue between the look and the wait still wakes it.
        let rung = bell.notify.notified();
        let claim = store.queue_claim(queue, max, visibility_ms).await?;
        let now = tokio::time::Instant::now();
        if !claim.jobs.is_empty() || now >= deadline {
            return Ok(claim.jobs);
        }
        let mut sleep = deadline - now;
        if let Some(next) = claim.next_in_ms {
            // +1 ms: a job due at `now + next` is claimable from that ms on.
            sleep = sleep.min(Duration::from_millis(next + 1));
        }
        if let Some(recheck) = bell.recheck {
            sleep = sleep.min(recheck);
        }
        tokio::select! {
            () = rung => {}
            () = tokio::time::sleep(sleep) => {}
        }
    }
}
