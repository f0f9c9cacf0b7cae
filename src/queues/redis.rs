//! Delayed queues on Redis: per queue a waiting zset (scored by due ms), an in-flight zset
//! (scored by visibility deadline), job hashes and a capped dead zset, all under the queue's
//! hash tag; every operation is one script (`queue_*.lua`, each prefixed by
//! `queue_common.lua`), reading the clock with `TIME`. Enqueues, claims and acks of one queue
//! that a worker takes up in one turn share one run of their script (see [`Groups`]).

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::group::{self, GroupCommit};
use crate::store::keys::Keys;
use crate::store::redis::{script_after, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::queues::{
    Acked, Bell, Bells, Cancelled, Claim, Claimed, DeadJob, Due, Enqueued, Idempotency, NewJob,
    Once, QueueStore, Stats, CLAIM_BYTES, DEAD_PER_CLAIM, IDEMPOTENCY_SECS, IDLE_SECS,
    IDLE_SLACK_SECS, LAPSED_PER_CLAIM, MAX_DEAD,
};
use crate::store::error::StoreError;
use crate::types::Name;

static ENQUEUE: LazyLock<Script> = script_after!("queue_common.lua", "queue_enqueue.lua");
static CLAIM: LazyLock<Script> = script_after!("queue_common.lua", "queue_claim.lua");
static ACK: LazyLock<Script> = script_after!("queue_common.lua", "queue_ack.lua");
static CANCEL: LazyLock<Script> = script_after!("queue_common.lua", "queue_cancel.lua");
static STATS: LazyLock<Script> = script_after!("queue_common.lua", "queue_stats.lua");
static DEAD: LazyLock<Script> = script_after!("queue_common.lua", "queue_dead.lua");

/// How long the claims waiting on a queue go without a look (one of them looks; see
/// `crate::queues::Room`): a safety net for enqueue announcements lost while the subscriber
/// reconnects (enqueues through this instance tell its waiting claims directly, the others
/// through pub/sub).
const RECHECK: Duration = Duration::from_secs(5);
/// How often the subscriber checks whether its store is gone.
const LISTENER_CHECK: Duration = Duration::from_secs(10);

const IDLE_MS: u64 = IDLE_SECS * 1000;
const IDLE_SLACK_MS: u64 = IDLE_SLACK_SECS * 1000;
/// What every expiry refresh (`touch` in `queue_common.lua`) is given.
const TOUCH_MS: u64 = IDLE_MS + IDLE_SLACK_MS;

/// This process's waiting claims, and the subscriber that tells them of the other instances'
/// enqueues, started by the first claim that waits.
#[derive(Debug, Default)]
struct Announced {
    bells: Bells,
    listening: OnceLock<()>,
}

impl Kept for Announced {}

static ANNOUNCED: Slot<Announced> = Slot::new();

impl RedisStore {
    fn bells(&self) -> &Bells {
        &self.kept(&ANNOUNCED).bells
    }
}

fn bad(what: &str, reply: &impl std::fmt::Debug) -> StoreError {
    StoreError::Internal(format!("unexpected queue {what} reply: {reply:?}"))
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Integer(i) => Some(*i),
        other => other.as_string()?.parse().ok(),
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v?.as_string()
}

fn name(v: Option<&Value>) -> Option<Name> {
    Name::try_from(text(v)?).ok()
}

impl QueueStore for RedisStore {
    async fn queue_enqueue(
        &self,
        queue: &Name,
        job: &NewJob,
        max_jobs: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Enqueued>, StoreError> {
        let due = match job.due {
            Due::In(ms) => ms.to_string(),
            Due::At(at) => format!("@{at}"),
        };
        let enqueue = Enqueue {
            id: job.id.clone(),
            id_made: job.id_made,
            payload: job.payload.clone(),
            due,
            max_attempts: job.max_attempts,
            idem: idem.map(|i| {
                (
                    self.keys.queue_idempotency(queue, &i.key),
                    i.fingerprint.clone(),
                )
            }),
        };
        // Every key of a queue is in its slot, so enqueues group on a Cluster too.
        self.kept(&GROUPS)
            .enqueues
            .join((queue.clone(), max_jobs), enqueue, self, enqueue_group)
            .await
            .unwrap_or_else(|| Err(shutting_down()))
    }

    async fn queue_claim(
        &self,
        queue: &Name,
        max: u32,
        visibility_ms: u64,
    ) -> Result<Claim, StoreError> {
        let ask = Ask { max, visibility_ms };
        self.kept(&GROUPS)
            .claims
            .join(queue.clone(), ask, self, claim_group)
            .await
            .unwrap_or_else(|| Err(shutting_down()))
    }

    async fn queue_ack(&self, queue: &Name, id: &Name, receipt: &str) -> Result<Acked, StoreError> {
        let ack = Ack {
            id: id.clone(),
            receipt: receipt.to_owned(),
        };
        self.kept(&GROUPS)
            .acks
            .join(queue.clone(), ack, self, ack_group)
            .await
            .unwrap_or_else(|| Err(shutting_down()))
    }

    async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> {
        let reply: String = self
            .pool
            .script(
                &CANCEL,
                self.keys.queue(queue).to_vec(),
                vec![id.to_string(), TOUCH_MS.to_string()],
            )
            .await?;
        match reply.as_str() {
            "ok" => Ok(Cancelled::Done),
            "not_found" => Ok(Cancelled::NotFound),
            "in_flight" => Ok(Cancelled::InFlight),
            _ => Err(bad("cancel", &reply)),
        }
    }

    async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError> {
        let reply: Vec<i64> = self
            .pool
            .script(&STATS, self.keys.queue(queue).to_vec(), ())
            .await?;
        let n = |i: usize| reply.get(i).and_then(|v| u64::try_from(*v).ok());
        Ok(Stats {
            delayed: n(0).ok_or_else(|| bad("stats", &reply))?,
            ready: n(1).ok_or_else(|| bad("stats", &reply))?,
            in_flight: n(2).ok_or_else(|| bad("stats", &reply))?,
            dead: n(3).ok_or_else(|| bad("stats", &reply))?,
        })
    }

    async fn queue_dead(
        &self,
        queue: &Name,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<DeadJob>, StoreError> {
        let reply: Value = self
            .pool
            .script(
                &DEAD,
                self.keys.queue(queue).to_vec(),
                vec![
                    after.unwrap_or(0).to_string(),
                    limit.to_string(),
                    CLAIM_BYTES.to_string(),
                ],
            )
            .await?;
        let Value::Array(rows) = &reply else {
            return Ok(Vec::new());
        };
        rows.iter()
            .map(|row| {
                let Value::Array(f) = row else { return None };
                Some(DeadJob {
                    seq: u64::try_from(int(f.first())?).ok()?,
                    id: name(f.get(1))?,
                    payload: text(f.get(2))?,
                    run_at: int(f.get(3))?,
                    attempts: u32::try_from(int(f.get(4))?).ok()?,
                })
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("dead", &reply))
    }

    async fn queue_bell(&self, queue: &Name) -> Bell {
        let announced = self.kept(&ANNOUNCED);
        announced.listening.get_or_init(|| listen(self));
        Bell {
            room: announced.bells.room(queue),
            recheck: Some(RECHECK),
        }
    }
}

fn shutting_down() -> StoreError {
    StoreError::Unavailable("the gateway is shutting down".to_owned())
}

/// Most requests in one script call, and the bytes of their arguments after which a call takes
/// no more: bound one script run however large a burst's group grew (a larger group goes as
/// several calls, one after the other, so requests stay in arrival order). 64 enqueues of small
/// jobs are ~200 Redis commands; 128 KiB is two jobs of the largest payload
/// ([`crate::queues::MAX_PAYLOAD_BYTES`]), whose copying stays far under a millisecond
/// (`tests/redis_time.rs` measures both).
const MAX_PER_CALL: usize = 64;
const MAX_ENQUEUE_BYTES: usize = 128 * 1024;
/// What an enqueue's idempotency record adds to its weight against [`MAX_ENQUEUE_BYTES`]: its
/// lookup and its write cost Redis about what copying 3 KiB of payload does
/// (`tests/redis_time.rs`: a run of 64 small keyed jobs held Redis ~0.95 ms, a 64 KiB job
/// ~0.35 ms), so a run takes at most 32 keyed jobs and stays near half a millisecond.
const IDEM_RECORD_WEIGHT: usize = 4 * 1024;
/// Claimed jobs one `queue_claim.lua` call may hand out, counted by the claims' `max`: one
/// claim's largest (docs/queues.md), so a call's work is bounded as one claim's is.
const MAX_CLAIMED_PER_CALL: usize = 100;
const MAX_ACK_BYTES: usize = 16 * 1024;

/// Requests waiting to go in one call, per queue: those a worker takes up in one turn cost one
/// round trip, one script run and one replica wait (issue 42), each answered as if it ran alone.
#[derive(Default)]
struct Groups {
    /// By queue and its job cap.
    enqueues: GroupCommit<(Name, u64), Enqueue, Result<Once<Enqueued>, StoreError>>,
    claims: GroupCommit<Name, Ask, Result<Claim, StoreError>>,
    acks: GroupCommit<Name, Ack, Result<Acked, StoreError>>,
}

impl Kept for Groups {}

static GROUPS: Slot<Groups> = Slot::new();

/// One enqueue's share of a `queue_enqueue.lua` call.
struct Enqueue {
    id: Name,
    /// [`NewJob::id_made`].
    id_made: bool,
    payload: String,
    /// `<delay ms>` or `@<run_at ms>`.
    due: String,
    max_attempts: u32,
    /// Its idempotency record's key and its fingerprint, under an `Idempotency-Key`.
    idem: Option<(String, String)>,
}

/// One claim's share of a `queue_claim.lua` call.
#[derive(Clone, Copy)]
struct Ask {
    max: u32,
    visibility_ms: u64,
}

/// One ack's share of a `queue_ack.lua` call.
struct Ack {
    id: Name,
    receipt: String,
}

/// A queue's group of enqueues in `queue_enqueue.lua` calls of at most [`MAX_PER_CALL`] jobs
/// and [`MAX_ENQUEUE_BYTES`] (an idempotency record weighing [`IDEM_RECORD_WEIGHT`]), in
/// order.
async fn enqueue_group(
    store: RedisStore,
    (queue, max_jobs): (Name, u64),
    enqueues: Vec<Enqueue>,
) -> Vec<Result<Once<Enqueued>, StoreError>> {
    let weight = |e: &Enqueue| {
        e.payload.len()
            + e.id.as_str().len()
            + e.idem
                .as_ref()
                .map_or(0, |(k, f)| k.len() + f.len() + IDEM_RECORD_WEIGHT)
            + 40
    };
    group::in_calls(enqueues, MAX_PER_CALL, MAX_ENQUEUE_BYTES, weight, |part| {
        store.enqueue_call(&queue, max_jobs, part)
    })
    .await
}

/// A queue's group of claims in `queue_claim.lua` calls of at most [`MAX_PER_CALL`] claims and
/// [`MAX_CLAIMED_PER_CALL`] jobs asked for, in order; a claim the script defers (its call's
/// bounds were spent before its turn) goes first in the next call.
async fn claim_group(
    store: RedisStore,
    queue: Name,
    asks: Vec<Ask>,
) -> Vec<Result<Claim, StoreError>> {
    let mut replies: Vec<Result<Claim, StoreError>> = Vec::with_capacity(asks.len());
    let mut left = std::collections::VecDeque::from(asks);
    while !left.is_empty() {
        // The first call of what is left; the rest are formed again after it.
        let part = group::calls(
            left.iter().copied().collect(),
            MAX_PER_CALL,
            MAX_CLAIMED_PER_CALL,
            |a| a.max as usize,
        )
        .swap_remove(0);
        let n = part.len();
        match store.claim_call(&queue, &part).await {
            Ok(done) => {
                let answered = done.len();
                replies.extend(done.into_iter().map(Ok));
                left.drain(..answered);
            }
            Err(e) => {
                replies.extend((0..n).map(|_| Err(e.clone())));
                left.drain(..n);
            }
        }
    }
    replies
}

/// A queue's group of acks in `queue_ack.lua` calls of at most [`MAX_PER_CALL`] acks and
/// [`MAX_ACK_BYTES`], in order.
async fn ack_group(
    store: RedisStore,
    queue: Name,
    acks: Vec<Ack>,
) -> Vec<Result<Acked, StoreError>> {
    let weight = |a: &Ack| a.id.as_str().len() + a.receipt.len() + 8;
    group::in_calls(acks, MAX_PER_CALL, MAX_ACK_BYTES, weight, |part| {
        store.ack_call(&queue, part)
    })
    .await
}

impl RedisStore {
    /// One `queue_enqueue.lua` call for `part`'s jobs, each answered on its own.
    async fn enqueue_call(
        &self,
        queue: &Name,
        max_jobs: u64,
        part: Vec<Enqueue>,
    ) -> Result<Vec<Result<Once<Enqueued>, StoreError>>, StoreError> {
        let mut keys = Vec::with_capacity(6 + part.len());
        keys.extend(self.keys.queue(queue));
        let mut args = Vec::with_capacity(6 + 6 * part.len());
        args.extend([
            max_jobs.to_string(),
            IDEMPOTENCY_SECS.to_string(),
            IDLE_MS.to_string(),
            IDLE_SLACK_MS.to_string(),
            self.keys.queue_bell(queue),
            self.bells().origin().to_owned(),
        ]);
        // The jobs' own ids answer their `created` and `existing` replies, which omit them.
        let mut ids = Vec::with_capacity(part.len());
        for e in part {
            let fingerprint = match e.idem {
                Some((key, fingerprint)) => {
                    keys.push(key);
                    fingerprint
                }
                None => String::new(),
            };
            args.extend([
                e.id.to_string(),
                e.payload,
                e.due,
                e.max_attempts.to_string(),
                fingerprint,
                if e.id_made { "1" } else { "" }.to_owned(),
            ]);
            ids.push(e.id);
        }
        let (reply, written): (Vec<Value>, _) =
            self.pool.script_written(&ENQUEUE, keys, args).await?;
        let mut at = reply.iter();
        let now = int(at.next()).ok_or_else(|| bad("enqueue", &reply))?;
        let once = ids
            .into_iter()
            .map(|id| self.enqueued(queue, id, now, &mut at))
            .collect::<Option<Vec<_>>>()
            .filter(|_| at.next().is_none())
            .ok_or_else(|| bad("enqueue", &reply))?
            .into_iter()
            .map(Ok)
            .collect();
        // A job accepted (now, before, or by the request replayed) is acknowledged once its
        // replicas hold it (docs/operations.md "Durable writes").
        Ok(written
            .settle(once, |o| {
                matches!(
                    o,
                    Once::Now(Enqueued::Created { .. } | Enqueued::Existing { .. })
                        | Once::Replayed(Enqueued::Created { .. } | Enqueued::Existing { .. })
                )
            })
            .await)
    }

    /// Job `id`'s reply, read off `at` within `queue_enqueue.lua`'s (whose store clock read
    /// `now`); tells this process's waiting claims of a new job.
    fn enqueued(
        &self,
        queue: &Name,
        id: Name,
        now: i64,
        at: &mut std::slice::Iter<'_, Value>,
    ) -> Option<Once<Enqueued>> {
        let once = match text(at.next())?.as_str() {
            "created" => {
                let run_at = int(at.next())?;
                // Told here rather than by the announcement coming back (`listen` skips this
                // store's own), so this process's waiting claims hear it while the subscriber
                // reconnects too.
                let due_in = u64::try_from(run_at.saturating_sub(now)).unwrap_or(0);
                self.bells().created(queue.as_str(), due_in);
                Once::Now(Enqueued::Created { id, run_at })
            }
            "existing" => Once::Now(Enqueued::Existing {
                id,
                run_at: int(at.next())?,
            }),
            "full" => Once::Now(Enqueued::Full),
            "key_reused" => Once::KeyReused,
            "replay" => {
                let tag = text(at.next())?;
                let (run_at, id) = (int(at.next())?, name(at.next())?);
                Once::Replayed(match tag.as_str() {
                    "created" => Enqueued::Created { id, run_at },
                    "existing" => Enqueued::Existing { id, run_at },
                    _ => return None,
                })
            }
            _ => return None,
        };
        Some(once)
    }

    /// One `queue_claim.lua` call for `part`'s claims: the answers of those it served, in
    /// order (the rest were deferred to the next call).
    async fn claim_call(&self, queue: &Name, part: &[Ask]) -> Result<Vec<Claim>, StoreError> {
        let mut args = Vec::with_capacity(5 + 2 * part.len());
        args.extend([
            LAPSED_PER_CLAIM.to_string(),
            DEAD_PER_CLAIM.to_string(),
            CLAIM_BYTES.to_string(),
            MAX_DEAD.to_string(),
            TOUCH_MS.to_string(),
        ]);
        for ask in part {
            args.push(ask.max.to_string());
            args.push(ask.visibility_ms.to_string());
        }
        let reply: Vec<Value> = self
            .pool
            .script(&CLAIM, self.keys.queue(queue).to_vec(), args)
            .await?;
        let next = int(reply.first()).ok_or_else(|| bad("claim", &reply))?;
        if reply.len() != part.len() + 1 {
            return Err(bad("claim", &reply));
        }
        let mut claims = Vec::with_capacity(part.len());
        for one in &reply[1..] {
            let jobs = match one {
                Value::Array(jobs) => jobs
                    .iter()
                    .map(claimed)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad("claim", &reply))?,
                // An empty Lua table comes back as an empty array or nil depending on the client.
                Value::Null => Vec::new(),
                // Deferred: this claim and those after it go in the next call.
                other if other.as_str().as_deref() == Some("later") => break,
                other => return Err(bad("claim", other)),
            };
            claims.push(Claim {
                jobs,
                next_in_ms: u64::try_from(next).ok(),
            });
        }
        if claims.is_empty() {
            // The first claim of a call has the call's whole bounds: never deferred.
            return Err(bad("claim", &reply));
        }
        Ok(claims)
    }

    /// One `queue_ack.lua` call for `part`'s acks, each answered on its own.
    async fn ack_call(
        &self,
        queue: &Name,
        part: Vec<Ack>,
    ) -> Result<Vec<Result<Acked, StoreError>>, StoreError> {
        let mut args = Vec::with_capacity(1 + 2 * part.len());
        args.push(TOUCH_MS.to_string());
        let n = part.len();
        for a in part {
            args.push(a.id.to_string());
            args.push(a.receipt);
        }
        let (reply, written): (Vec<String>, _) = self
            .pool
            .script_written(&ACK, self.keys.queue(queue).to_vec(), args)
            .await?;
        if reply.len() != n {
            return Err(bad("ack", &reply));
        }
        let acked = reply
            .iter()
            .map(|r| match r.as_str() {
                "ok" => Ok(Acked::Done),
                "expired" => Ok(Acked::Expired),
                "unknown" => Ok(Acked::Unknown),
                _ => Err(bad("ack", &reply)),
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(Ok)
            .collect();
        // An ack lost in a failover would run the job again.
        Ok(written.settle(acked, |a| *a == Acked::Done).await)
    }
}

/// One claimed job `[id, payload, run_at, attempts, receipt]`.
fn claimed(job: &Value) -> Option<Claimed> {
    let Value::Array(f) = job else { return None };
    Some(Claimed {
        id: name(f.first())?,
        payload: text(f.get(1))?,
        run_at: int(f.get(2))?,
        attempts: u32::try_from(int(f.get(3))?).ok()?,
        receipt: text(f.get(4))?,
    })
}

/// Subscribes to every queue's enqueue announcements (one pattern subscription on its own
/// connection) and tells this process's waiting claims of the other instances' new jobs;
/// re-subscribes after each reconnect and ends once the store is dropped. Each subscription
/// makes the rooms look once: what was announced before it was not heard.
///
/// An announcement is `<origin> <due in ms>` (see `queue_enqueue.lua`): this store's own are
/// skipped, as its enqueues told its rooms already. The queue is the channel's suffix as
/// written, looked up as text: it may be a caller-scoped name, outside the name rule.
///
/// Classic pub/sub on a Cluster too, not sharded: sharded pub/sub has no pattern form, so it
/// would take a subscription per queue being waited on, made and dropped as claims come and
/// go; the price of the classic form is that the Cluster bus carries each announcement (an
/// empty message) to every node.
fn listen(store: &RedisStore) {
    let (pattern, name_at) = store.keys.queue_bell_pattern();
    let weak = store.downgrade();
    let client = match Builder::from_config(store.subscriber().0.clone())
        .set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "queue announcements off: cannot build a subscriber");
            return;
        }
    };
    let mut messages = client.message_rx();
    let mut reconnects = client.reconnect_rx();
    client.connect();
    tokio::spawn(async move {
        if client.wait_for_connect().await.is_ok() {
            match client.psubscribe(pattern.clone()).await {
                Ok(()) => {
                    if let Some(store) = weak.upgrade() {
                        store.bells().missed();
                    }
                }
                Err(e) => tracing::warn!(error = %e, "queue announcements: subscribe failed"),
            }
        }
        let mut check = tokio::time::interval(LISTENER_CHECK);
        loop {
            tokio::select! {
                message = messages.recv() => match message {
                    Ok(message) => {
                        let Some(store) = weak.upgrade() else { break };
                        let bells = store.bells();
                        let text = message.value.as_string().unwrap_or_default();
                        let (origin, due_in) = text.split_once(' ').unwrap_or(("", ""));
                        if origin == bells.origin() {
                            continue;
                        }
                        // Unreadable (an older gateway's empty announcement): a look finds out.
                        let due_in = due_in.parse().unwrap_or(0);
                        if let Some(queue) = message.channel.get(name_at..) {
                            bells.created(queue, due_in);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if let Some(store) = weak.upgrade() {
                            store.bells().missed();
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
                reconnected = reconnects.recv() => {
                    if reconnected.is_ok() {
                        let _ = client.psubscribe(pattern.clone()).await;
                        // Announcements made while it was away are gone.
                        if let Some(store) = weak.upgrade() {
                            store.bells().missed();
                        }
                    }
                }
                _ = check.tick() => {
                    if weak.upgrade().is_none() {
                        break;
                    }
                }
            }
        }
        let _ = client.quit().await;
    });
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A delayed queue's keys, in the order its scripts take them (see `queue_common.lua`):
    /// `due`, `flight`, `meta`, `pay`, `dead`, `ctr`, all under the queue's hash tag.
    pub(crate) fn queue(&self, queue: &Name) -> [String; 6] {
        ["due", "flight", "meta", "pay", "dead", "ctr"]
            .map(|part| format!("{}q:{{{queue}}}:{part}", self.prefix))
    }

    /// The first outcome of an enqueue under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the queue's slot so the enqueue script records it atomically.
    pub(crate) fn queue_idempotency(&self, queue: &Name, digest: &str) -> String {
        format!("{}q:{{{queue}}}:idem:{digest}", self.prefix)
    }

    /// The pub/sub channel an enqueue to `queue` is announced on (classic pub/sub, which a
    /// Cluster broadcasts to every node, so one pattern subscription anywhere hears it).
    pub(crate) fn queue_bell(&self, queue: &Name) -> String {
        format!("{}qbell:{queue}", self.prefix)
    }

    /// The pattern matching every [`Self::queue_bell`] channel, and the length of the text
    /// before the queue name. Glob characters of the prefix are escaped.
    pub(crate) fn queue_bell_pattern(&self) -> (String, usize) {
        let mut pattern = String::new();
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str("qbell:*");
        (pattern, self.prefix.len() + "qbell:".len())
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_queues_keys_share_a_slot() {
        let (keys, q) = (Keys::new("gw:"), name("mail"));
        let mut all = keys.queue(&q).to_vec();
        all.push(keys.queue_idempotency(&q, "ab"));
        assert_one_slot("mail", "gw:q:{mail}:due", &all);
    }
}
