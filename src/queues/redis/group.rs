//! The grouped calls: the enqueues, claims and acks of one queue that a worker takes up in one
//! turn, each kind sent as one script call (or a few, within bounds) and each request answered
//! as if it ran alone.

use fred::prelude::*;

use crate::store::group::{self, GroupCommit};
use crate::store::redis::RedisStore;
use crate::store::slots::{Kept, Slot};

use super::wire::{
    bad, claimed, int, name, text, ACK, CLAIM, ENQUEUE, IDLE_MS, IDLE_SLACK_MS, TOUCH_MS,
};
use crate::queues::{
    Acked, Claim, Enqueued, Once, CLAIM_BYTES, DEAD_PER_CLAIM, IDEMPOTENCY_SECS, LAPSED_PER_CLAIM,
    MAX_DEAD,
};
use crate::store::error::StoreError;
use crate::types::Name;

pub(super) fn shutting_down() -> StoreError {
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
/// What an ack's idempotency record adds to its weight against [`MAX_ACK_BYTES`]: its lookup
/// and its write about double an ack's work, and an ack weighs some 250 bytes of that budget
/// (64 of them fill it), so a run takes some 40 keyed acks. The enqueues' weight
/// ([`IDEM_RECORD_WEIGHT`]) is measured against their 128 KiB and would let only three in.
const ACK_IDEM_WEIGHT: usize = 256;

/// Requests waiting to go in one call, per queue: those a worker takes up in one turn cost one
/// round trip, one script run and one replica wait, each answered as if it ran alone.
#[derive(Default)]
pub(super) struct Groups {
    /// By queue and its job cap.
    pub(super) enqueues: GroupCommit<(Name, u64), Enqueue, Result<Once<Enqueued>, StoreError>>,
    pub(super) claims: GroupCommit<Name, Ask, Result<Claim, StoreError>>,
    pub(super) acks: GroupCommit<Name, Ack, Result<Once<Acked>, StoreError>>,
}

impl Kept for Groups {}

pub(super) static GROUPS: Slot<Groups> = Slot::new();

/// One enqueue's share of a `queue_enqueue.lua` call.
pub(super) struct Enqueue {
    pub(super) id: Name,
    /// [`NewJob::id_made`].
    pub(super) id_made: bool,
    pub(super) payload: String,
    /// `<delay ms>` or `@<run_at ms>`.
    pub(super) due: String,
    pub(super) max_attempts: u32,
    /// Its idempotency record's key and its fingerprint, under an `Idempotency-Key`.
    pub(super) idem: Option<(String, String)>,
}

/// One claim's share of a `queue_claim.lua` call.
#[derive(Clone, Copy)]
pub(super) struct Ask {
    pub(super) max: u32,
    pub(super) visibility_ms: u64,
}

/// One ack's share of a `queue_ack.lua` call.
pub(super) struct Ack {
    pub(super) id: Name,
    pub(super) receipt: String,
    /// Its idempotency record's key and its fingerprint, under an `Idempotency-Key`.
    pub(super) idem: Option<(String, String)>,
}

/// A queue's group of enqueues in `queue_enqueue.lua` calls of at most [`MAX_PER_CALL`] jobs
/// and [`MAX_ENQUEUE_BYTES`] (an idempotency record weighing [`IDEM_RECORD_WEIGHT`]), in
/// order.
pub(super) async fn enqueue_group(
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
pub(super) async fn claim_group(
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
/// [`MAX_ACK_BYTES`] (an idempotency record weighing [`ACK_IDEM_WEIGHT`]), in order.
pub(super) async fn ack_group(
    store: RedisStore,
    queue: Name,
    acks: Vec<Ack>,
) -> Vec<Result<Once<Acked>, StoreError>> {
    let weight = |a: &Ack| {
        a.id.as_str().len()
            + a.receipt.len()
            + a.idem
                .as_ref()
                .map_or(0, |(k, f)| k.len() + f.len() + ACK_IDEM_WEIGHT)
            + 8
    };
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
    ) -> Result<Vec<Result<Once<Acked>, StoreError>>, StoreError> {
        let mut keys = Vec::with_capacity(6 + part.len());
        keys.extend(self.keys.queue(queue));
        let mut args = Vec::with_capacity(2 + 3 * part.len());
        args.extend([TOUCH_MS.to_string(), IDEMPOTENCY_SECS.to_string()]);
        let n = part.len();
        for a in part {
            let fingerprint = match a.idem {
                Some((key, fingerprint)) => {
                    keys.push(key);
                    fingerprint
                }
                None => String::new(),
            };
            args.extend([a.id.to_string(), a.receipt, fingerprint]);
        }
        let (reply, written): (Vec<String>, _) = self.pool.script_written(&ACK, keys, args).await?;
        if reply.len() != n {
            return Err(bad("ack", &reply));
        }
        let acked = reply
            .iter()
            .map(|r| match r.as_str() {
                "ok" => Ok(Once::Now(Acked::Done)),
                "expired" => Ok(Once::Now(Acked::Expired)),
                "unknown" => Ok(Once::Now(Acked::Unknown)),
                "replay" => Ok(Once::Replayed(Acked::Done)),
                "key_reused" => Ok(Once::KeyReused),
                _ => Err(bad("ack", &reply)),
            })
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(Ok)
            .collect();
        // Every answer waits for the replicas, refusals too: an ack lost in a failover would run
        // the job again, and a refusal read off a master whose recent writes a failover then
        // discards (a retried ack's first attempt among them) would tell the worker "not
        // acked" where the surviving history says acked — as a fault-injection run saw, with a
        // restarted replica that had never synced promoted over the master that took the ack.
        // A refusal is answered once the replicas hold the state it read.
        Ok(written.settle(acked, |_| true).await)
    }
}
