//! Delayed queues on Redis: per queue a waiting zset (scored by due ms), an in-flight zset
//! (scored by visibility deadline), job hashes and a capped dead zset, all under the queue's
//! hash tag; every operation is one script (`queue_*.lua`, each prefixed by
//! `queue_common.lua`), reading the clock with `TIME`.

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::{script_after, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::queues::{
    Acked, Bell, Bells, Cancelled, Claim, Claimed, DeadJob, Due, Enqueued, Idempotency, NewJob,
    Once, QueueStore, Stats, CLAIM_BYTES, DEAD_PER_CLAIM, IDEMPOTENCY_SECS, IDLE_SECS,
    LAPSED_PER_CLAIM, MAX_DEAD,
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
        let mut keys = self.keys.queue(queue).to_vec();
        keys.push(
            self.keys
                .queue_idempotency(queue, idem.map_or("", |i| i.key.as_str())),
        );
        let (delay, at) = match job.due {
            Due::In(ms) => (ms.to_string(), String::new()),
            Due::At(at) => (String::new(), at.to_string()),
        };
        let (reply, written): (Vec<Value>, _) = self
            .pool
            .script_written(
                &ENQUEUE,
                keys,
                vec![
                    job.id.to_string(),
                    job.payload.clone(),
                    delay,
                    at,
                    job.max_attempts.to_string(),
                    max_jobs.to_string(),
                    idem.map_or_else(String::new, |i| i.fingerprint.clone()),
                    IDEMPOTENCY_SECS.to_string(),
                    IDLE_MS.to_string(),
                    self.keys.queue_bell(queue),
                    self.bells().origin().to_owned(),
                ],
            )
            .await?;
        let outcome = |tag: &str, rest: &[Value]| -> Option<Enqueued> {
            let run_at = int(rest.first())?;
            let id = name(rest.get(1))?;
            match tag {
                "created" => Some(Enqueued::Created { id, run_at }),
                "existing" => Some(Enqueued::Existing { id, run_at }),
                _ => None,
            }
        };
        let tag = text(reply.first()).unwrap_or_default();
        let once = match tag.as_str() {
            "key_reused" => Once::KeyReused,
            "full" => Once::Now(Enqueued::Full),
            "replay" => Once::Replayed(
                outcome(&text(reply.get(1)).unwrap_or_default(), &reply[2..])
                    .ok_or_else(|| bad("enqueue", &reply))?,
            ),
            tag => Once::Now(outcome(tag, &reply[1..]).ok_or_else(|| bad("enqueue", &reply))?),
        };
        // Told here rather than by the announcement coming back (`listen` skips this store's
        // own), so this process's waiting claims hear it while the subscriber reconnects too.
        if matches!(once, Once::Now(Enqueued::Created { .. })) {
            let due_in = int(reply.get(3))
                .and_then(|ms| u64::try_from(ms).ok())
                .ok_or_else(|| bad("enqueue", &reply))?;
            self.bells().created(queue.as_str(), due_in);
        }
        // A job accepted (now, before, or by the request replayed) is acknowledged once its
        // replicas hold it (docs/operations.md "Durable writes").
        if let Once::Now(Enqueued::Created { .. } | Enqueued::Existing { .. })
        | Once::Replayed(Enqueued::Created { .. } | Enqueued::Existing { .. }) = once
        {
            written.replicated().await?;
        }
        Ok(once)
    }

    async fn queue_claim(
        &self,
        queue: &Name,
        max: u32,
        visibility_ms: u64,
    ) -> Result<Claim, StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(
                &CLAIM,
                self.keys.queue(queue).to_vec(),
                vec![
                    max.to_string(),
                    visibility_ms.to_string(),
                    LAPSED_PER_CLAIM.to_string(),
                    DEAD_PER_CLAIM.to_string(),
                    CLAIM_BYTES.to_string(),
                    MAX_DEAD.to_string(),
                    IDLE_MS.to_string(),
                ],
            )
            .await?;
        let next = int(reply.first()).ok_or_else(|| bad("claim", &reply))?;
        let jobs = match reply.get(1) {
            Some(Value::Array(jobs)) => jobs
                .iter()
                .map(|job| {
                    let Value::Array(f) = job else { return None };
                    Some(Claimed {
                        id: name(f.first())?,
                        payload: text(f.get(1))?,
                        run_at: int(f.get(2))?,
                        attempts: u32::try_from(int(f.get(3))?).ok()?,
                        receipt: text(f.get(4))?,
                    })
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("claim", &reply))?,
            // An empty Lua table comes back as an empty array or nil depending on the client.
            _ => Vec::new(),
        };
        Ok(Claim {
            jobs,
            next_in_ms: u64::try_from(next).ok(),
        })
    }

    async fn queue_ack(&self, queue: &Name, id: &Name, receipt: &str) -> Result<Acked, StoreError> {
        let (reply, written): (String, _) = self
            .pool
            .script_written(
                &ACK,
                self.keys.queue(queue).to_vec(),
                vec![id.to_string(), receipt.to_owned(), IDLE_MS.to_string()],
            )
            .await?;
        match reply.as_str() {
            "ok" => {
                // An ack lost in a failover would run the job again.
                written.replicated().await?;
                Ok(Acked::Done)
            }
            "expired" => Ok(Acked::Expired),
            "unknown" => Ok(Acked::Unknown),
            _ => Err(bad("ack", &reply)),
        }
    }

    async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> {
        let reply: String = self
            .pool
            .script(
                &CANCEL,
                self.keys.queue(queue).to_vec(),
                vec![id.to_string(), IDLE_MS.to_string()],
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
