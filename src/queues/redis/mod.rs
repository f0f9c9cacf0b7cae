//! Delayed queues on Redis: per queue a waiting zset (scored by due ms), an in-flight zset
//! (scored by visibility deadline), job hashes and a capped dead zset, all under the queue's
//! hash tag; every operation is one script (`queue_*.lua`, each prefixed by
//! `queue_common.lua`), reading the clock with `TIME`. Enqueues, claims and acks of one queue
//! that a worker takes up in one turn share one run of their script (see [`group::Groups`]).
//!
//! Here: the store trait. [`group`]: the grouped enqueues, claims and acks; [`announce`]: the
//! waiting claims and the subscriber that wakes them; [`wire`]: the scripts, the keys and the
//! decoding of replies, which the others share.

mod announce;
mod group;
mod wire;

use fred::prelude::*;

use crate::store::redis::RedisStore;

use crate::queues::{
    Acked, Bell, Cancelled, Claim, DeadJob, Due, Enqueued, Idempotency, Listening, NewJob, Once,
    QueueStore, Stats, CLAIM_BYTES,
};
use crate::store::error::StoreError;
use crate::types::Name;
use announce::{listen, ANNOUNCED, RECHECK};
use group::{ack_group, claim_group, enqueue_group, shutting_down, Ack, Ask, Enqueue, GROUPS};
use wire::{bad, int, name, text, CANCEL, DEAD, STATS, TOUCH_MS};

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

    async fn queue_ack(
        &self,
        queue: &Name,
        id: &Name,
        receipt: &str,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Acked>, StoreError> {
        let ack = Ack {
            id: id.clone(),
            receipt: receipt.to_owned(),
            idem: idem.map(|i| {
                (
                    self.keys.queue_idempotency(queue, &i.key),
                    i.fingerprint.clone(),
                )
            }),
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
            next_in_ms: n(4),
        })
    }

    async fn queue_listen(&self, queue: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&self.keys.queue_events(queue)))
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
            room: announced.bells.room(queue, self.timers()),
            recheck: Some(RECHECK),
        }
    }
}
