//! Delayed queues: jobs waiting in a sorted set scored by their due time, claimed atomically
//! (one job to one claimer) with a visibility timeout and a receipt, acked, cancelled, and
//! moved to a capped dead list once they used up `max_attempts`.
//!
//! The queue's clock is the store's (`TIME` in the Lua scripts, the process clock in memory).
//! Claiming is at-least-once: a claim that is not acked before its visibility deadline lapses,
//! and the job is due again with `attempts` kept (the next claim counts one more).
//!
//! Bounds (docs/api.md "Clients and abuse"): a queue holds at most `GATEWAY_QUEUE_MAX_JOBS` live
//! jobs (waiting or in flight); its dead list keeps the newest [`MAX_DEAD`]; one claim moves
//! at most [`LAPSED_PER_CLAIM`] lapsed claims back and returns at most [`CLAIM_BYTES`] of
//! payloads (at least one job); a queue whose keys see no write expires [`IDLE_SECS`] after
//! its last due time or visibility deadline; at most [`MAX_WAITING_CLAIMS`] claims wait on one
//! queue in one process, and an enqueue wakes one of them, not all (see [`claim_waiting`]).

mod http;
pub mod logic;
mod memory;
mod redis;
mod settings;

pub use http::{Domain, QueuesState};
pub use settings::{Flags, Settings};

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;

pub use crate::store::channels::{Heard, Listening};
use crate::store::error::StoreError;
use crate::types::Name;
pub use crate::types::{Idempotency, Once, IDEMPOTENCY_SECS};
pub use crate::wait::Room;
use crate::wait::{wait_in_room, Look, Rooms};

/// Largest serialized payload (docs/api.md: 64 KiB).
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;
/// Dead jobs kept per queue; the oldest dead job goes when another dies past it.
pub const MAX_DEAD: u64 = 1000;
/// Lapsed claims one claim call moves back to the waiting set (the rest on later calls).
pub const LAPSED_PER_CLAIM: u32 = 100;
/// Payload bytes one claim or one dead-list page returns at most (but always one job).
pub const CLAIM_BYTES: u64 = 1024 * 1024;
/// Jobs one claim call examines at most beyond `max` (those it sends to the dead list).
pub const DEAD_PER_CLAIM: u32 = 100;
/// Claims that may wait (`wait_ms`) on one queue in one gateway process at once; one more is
/// answered at once, as if its `wait_ms` were 0 (docs/queues.md "Delayed queues"). Per queue name
/// as the store layer has it, so per queue of each caller where names are caller-scoped.
pub const MAX_WAITING_CLAIMS: usize = 64;
/// A queue's keys expire this long after the later of their last write and the latest due
/// time or visibility deadline they hold: an abandoned queue disappears, a delayed job never
/// does before it is due.
pub const IDLE_SECS: u64 = 7 * 86_400;
/// What a refresh of a queue's expiry on Redis sets beyond [`IDLE_SECS`], so that the enqueues
/// of the next hour whose jobs are due no later find the expiry far enough and refresh nothing
/// (`queue_enqueue.lua`): the keys expire between `IDLE_SECS` and this much more after the
/// later of their last write and the latest due time or deadline they hold. Well under
/// `IDLE_SECS`, which it only lengthens.
pub const IDLE_SLACK_SECS: u64 = 3600;

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
    /// `id` is one [`made_id`] returned for this job (the request had none), so no job holds
    /// it yet and the store need not look; false for every id a client gave, whatever its
    /// shape.
    pub id_made: bool,
    pub payload: String,
    pub due: Due,
    /// 1..=[`logic::MAX_ATTEMPTS`].
    pub max_attempts: u32,
}

/// A new job's id, for an enqueue that gave none: 128 random bits in hex. The enqueue script
/// adds a job with such an id without looking for one that holds it ([`NewJob::id_made`]), so
/// it must never equal an id a queue holds. Client ids cannot be kept out by their shape (any
/// name is a client's to give, these 32 hex digits too, and refusing some would change
/// answers), so it rests on the bits: they come from a CSPRNG (`rand`'s thread generator,
/// ChaCha seeded by the OS), so no client can know one before the gateway hands it out and
/// give it first, and a client that gives one it was handed out is looked up like any id it
/// gives (answered `existing`); and two made ids, or a made id and any of a queue's at most
/// `GATEWAY_QUEUE_MAX_JOBS` + [`MAX_DEAD`] ids, meet with odds about n / 2^128 per enqueue.
pub fn made_id() -> Name {
    Name::try_from(format!("{:032x}", rand::random::<u128>())).expect("hex is a name")
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
    /// The queue holds no such job and never issued this receipt: the job never existed (or
    /// the whole queue expired). A job acked or cancelled is gone too, but the receipt it was
    /// claimed with was issued, so that one is [`Acked::Expired`].
    Unknown,
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
    /// In how many ms a delayed job falls due or a claim lapses, the soonest; `None` when
    /// nothing will.
    pub next_in_ms: Option<u64>,
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

/// What the claims waiting on one queue in this process share (see [`claim_waiting`]).
#[derive(Debug, Clone)]
pub struct Bell {
    pub room: Arc<Room>,
    /// Longest the room goes without a look when enqueues may arrive unheard (another
    /// instance's announcements, lost while the subscriber reconnects); `None` when every
    /// enqueue reaches [`Bells::created`].
    pub recheck: Option<Duration>,
}

crate::store::store_trait! {
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
        ) -> Result<Once<Enqueued>, StoreError> = "queues.enqueue";
        /// Moves lapsed claims back (at most [`LAPSED_PER_CLAIM`]), then claims up to `max` due
        /// jobs oldest first for `visibility_ms`, sending those that used up their attempts to
        /// the dead list instead.
        async fn queue_claim(&self, queue: &Name, max: u32, visibility_ms: u64)
            -> Result<Claim, StoreError> = "queues.claim";
        /// Removes job `id` if `receipt` is its current claim's. Under `idem`, the same step
        /// looks for the key's earlier ack, which took effect, and records this one if it does.
        async fn queue_ack(&self, queue: &Name, id: &Name, receipt: &str, idem: Option<&Idempotency>)
            -> Result<Once<Acked>, StoreError> = "queues.ack";
        async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> = "queues.cancel";
        async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError> = "queues.stats";
        /// Up to `limit` dead jobs after `after`, oldest death first, stopping early past
        /// [`CLAIM_BYTES`] of payloads.
        async fn queue_dead(&self, queue: &Name, after: Option<u64>, limit: usize)
            -> Result<Vec<DeadJob>, StoreError> = "queues.dead";
        /// Listens to `queue`'s ready jobs: each run that may change them (an enqueue, a claim,
        /// a cancel) publishes once (one subscription per queue per process).
        async fn queue_listen(&self, queue: &Name) -> Result<Listening, StoreError> = _;
        /// The room of the claims waiting on `queue` in this process, which enqueues to it tell.
        async fn queue_bell(&self, queue: &Name) -> Bell = _;
    }
}

/// The rooms of one store's queues, held weakly: a queue nobody waits on costs nothing. Keyed
/// by the queue's name as the store layer has it (the text of the [`Name`] the handler passes,
/// which may be a caller-scoped name), so an announcement's channel finds its room without
/// being parsed back into a name.
#[derive(Debug)]
pub struct Bells {
    rooms: Rooms,
    origin: String,
}

impl Default for Bells {
    fn default() -> Self {
        Self {
            rooms: Rooms::default(),
            origin: format!("{:016x}", rand::random::<u64>()),
        }
    }
}

impl Bells {
    /// The room of `queue`, made (sleeping on `clock`, the store's) when nobody holds it.
    pub fn room(&self, queue: &Name, clock: &Clock) -> Arc<Room> {
        self.rooms.room(queue.as_str(), clock)
    }

    /// A job was created in `queue`, due in `due_in_ms` by the store's clock: a job due now
    /// is one turn (one waiting claim looks); a later one sets the alarm, and nobody looks
    /// before it is due.
    pub fn created(&self, queue: &str, due_in_ms: u64) {
        let Some(room) = self.rooms.existing(queue) else {
            return;
        };
        if due_in_ms == 0 {
            room.give_turn();
        } else {
            // +1 ms: a job due at `now + due_in` is claimable from that ms on.
            let due_in = us(Duration::from_millis(due_in_ms.saturating_add(1)));
            room.expect(room.clock().now_us().saturating_add(due_in));
        }
    }

    /// Announcements may have been lost (the subscriber reconnected, or fell behind): one
    /// waiting claim of every room looks now, rather than at the next re-check.
    pub fn missed(&self) {
        self.rooms.missed();
    }

    /// Names this store in its announcements, so that its own, heard back, are not counted
    /// twice (it tells its rooms directly).
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// Claims like [`QueueStore::queue_claim`], and when nothing is due waits up to `wait` for a
/// job, looking again when the room gives this claim a turn, when it takes the room's alarm,
/// and once more at its own deadline. A claim arriving when [`MAX_WAITING_CLAIMS`] wait on the
/// queue looks once and answers, as if `wait` were zero.
///
/// What holds, with several gateway instances on one Redis (each wakes only its own waiting
/// claims, from its enqueues and from the others' announcements):
/// - an enqueue of a job due now wakes one waiting claim in each instance that has any, not
///   every waiting claim: as many looks as instances, whatever the number of waiters;
/// - a due job is never left while claims sleep: a look happens after it became due in every
///   instance with waiting claims (a turn from its enqueue, or the alarm at its due time or
///   visibility deadline), and every look leaves the alarm at the next thing it saw due — now,
///   when it left due jobs behind (its `max` or byte cap, or turns that arrived while no claim
///   listened and were merged into one) — so another claim looks at once. A claim that finds
///   nothing because another instance's claim took the job was not needed. A claim that goes
///   away before its look reports hands the look on (see `crate::wait`).
/// - announcements an instance's subscriber may have lost (it reconnected, or fell behind)
///   make one claim per room look once it is listening again ([`Bells::missed`]); what pub/sub
///   drops without either sign is covered by the room's re-check ([`Bell::recheck`], 5 s on
///   Redis).
pub(crate) async fn claim_waiting<S: QueueStore>(
    store: &S,
    queue: &Name,
    max: u32,
    visibility_ms: u64,
    wait: Duration,
) -> Result<Vec<Claimed>, StoreError> {
    let bell = if wait.is_zero() {
        None
    } else {
        Some(store.queue_bell(queue).await)
    };
    let seated = bell.and_then(|bell| {
        let seat = bell.room.seat(MAX_WAITING_CLAIMS)?;
        Some((bell, seat))
    });
    let Some((bell, _seat)) = seated else {
        return Ok(store.queue_claim(queue, max, visibility_ms).await?.jobs);
    };
    wait_in_room(&bell.room, wait, || async {
        let claim = store.queue_claim(queue, max, visibility_ms).await?;
        let now = bell.room.clock().now_us();
        // +1 ms: a job due at `now + next` is claimable from that ms on.
        let next = claim
            .next_in_ms
            .map(|ms| now.saturating_add(us(Duration::from_millis(ms.saturating_add(1)))));
        let recheck = bell.recheck.map(|r| now.saturating_add(us(r)));
        let next = match (next, recheck) {
            (Some(next), Some(recheck)) => Some(next.min(recheck)),
            (next, recheck) => next.or(recheck),
        };
        Ok(Look {
            done: !claim.jobs.is_empty(),
            answer: claim.jobs,
            next,
            spends_turn: false,
        })
    })
    .await
}

/// `d` in µs, as the rooms' times are.
fn us(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}
