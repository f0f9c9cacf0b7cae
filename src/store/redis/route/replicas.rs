//! Acknowledged means durable (`GATEWAY_WRITE_REPLICAS`, docs/operations.md "Durable
//! writes"): a lasting write is answered with success only once the configured number of
//! replicas of its master hold it.
//!
//! Redis `WAIT` blocks the connection that sends it, and counts only the writes that
//! connection made. So each master gets connections of its own for waits (a [`Replicas`]),
//! never the auto-pipelining ones that carry the requests: a `WAIT` there would hold up every
//! unrelated command queued behind it. On that connection a wait is two commands: a tiny write
//! (the *barrier*, `SET <prefix>durable:{tag} PX`, in a slot of that master) and `WAIT n
//! timeout`. Replication is one ordered stream per master, and the barrier is sent after the
//! caller's write was answered, so the barrier's offset is past the write's: once `n` replicas
//! hold the barrier they hold the write — and any earlier write, from any connection or any
//! gateway instance. That is also what makes an idempotent replay safe: the replay writes
//! nothing, but the record it read is older than the barrier.
//!
//! Batched: callers that ask while a wait is in flight join the next one, so a hot voucher or
//! queue pays one wait per batch, not one per request; a connection never has more than one
//! wait on it, and a second connection lets the next wait start while one is in flight. Hand-written because the wait must be on a connection of the write's own master
//! and coalesce across requests, which no crate offers for fred.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use fred::prelude::*;
use fred::types::Expiration;
use tokio::sync::oneshot;

use crate::config::WriteReplicas;
use crate::store::error::StoreError;
use crate::store::keys::hash_tag;

/// How long a barrier key lives: it only has to reach the replicas.
const BARRIER_TTL_MS: i64 = 10_000;

/// What every master's waits share: the setting, the key prefix and the store timeout.
#[derive(Debug, Clone)]
pub(crate) struct Durability {
    pub(crate) setting: WriteReplicas,
    pub(crate) prefix: Arc<str>,
    /// The store timeout, added to the wait's own on the client side (the barrier may queue
    /// behind the wait in flight).
    pub(crate) store_timeout: Duration,
}

type Answer = oneshot::Sender<Result<(), StoreError>>;

/// Wait connections per master. Two, so a wait can start while another is in flight: with
/// one, a write answered just after a wait was sent waited for that wait and then its own (1.5
/// waits on average, measured in docs/performance.md); a `WAIT` blocks its connection, so
/// overlapping waits need connections of their own.
const LANES: usize = 2;

/// One master's wait connections and the callers waiting for the next wait.
pub(crate) struct Replicas {
    clients: Vec<Client>,
    durability: Durability,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    waiting: Vec<Answer>,
    /// The hash tag of the first waiting write: the barrier goes to its slot (on a Cluster,
    /// every waiter's slot belongs to this master).
    tag: Option<String>,
    /// The wait connections no wait is using now.
    idle: Vec<usize>,
}

impl Replicas {
    /// `make` builds a connection of its own to the master the writes go to.
    pub(crate) fn new(
        make: impl Fn() -> Result<Client, Error>,
        durability: Durability,
    ) -> Result<Arc<Self>, Error> {
        let clients = (0..LANES).map(|_| make()).collect::<Result<Vec<_>, _>>()?;
        for client in &clients {
            client.connect();
        }
        Ok(Arc::new(Replicas {
            clients,
            durability,
            state: Mutex::new(State {
                idle: (0..LANES).collect(),
                ..State::default()
            }),
        }))
    }

    /// Waits up to `within` for the wait connection, as for the request connections at
    /// start-up: the first writes must not fail for a connection still being made.
    pub(crate) async fn connected(&self, within: Duration) {
        let all = futures::future::join_all(self.clients.iter().map(|c| c.wait_for_connect()));
        let _ = tokio::time::timeout(within, all).await;
    }

    /// Waits until the configured replicas hold every write this master answered before the
    /// call, `key` being one of them. [`StoreError::Unreplicated`] when they do not confirm
    /// in time.
    pub(crate) async fn confirm(self: &Arc<Self>, key: &str) -> Result<(), StoreError> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting.push(tx);
            if state.tag.is_none() {
                state.tag = Some(hash_tag(key).to_owned());
            }
            state.idle.pop()
        };
        if let Some(lane) = start {
            // A task of its own, like a group commit's batch: a caller that gives up must not
            // strand the others waiting on the same wait.
            tokio::spawn(self.clone().run(lane));
        }
        rx.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the replica wait ended without an answer".to_owned(),
            ))
        })
    }

    /// Sends waits on connection `lane` while callers are waiting, each covering all that
    /// waited when it was sent.
    async fn run(self: Arc<Self>, lane: usize) {
        loop {
            let (batch, tag) = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if state.waiting.is_empty() {
                    state.idle.push(lane);
                    return;
                }
                (std::mem::take(&mut state.waiting), state.tag.take())
            };
            let outcome = self
                .wait(&self.clients[lane], tag.as_deref().unwrap_or_default())
                .await;
            let mut batch = batch;
            if matches!(outcome, Err(StoreError::Timeout)) {
                // The master left a whole wait unanswered: the writes queued behind it get its
                // answer too, rather than a wait of their own that would hold them the whole
                // timeout again.
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                batch.append(&mut state.waiting);
                state.tag = None;
            }
            for tx in batch {
                let _ = tx.send(outcome.clone());
            }
        }
    }

    /// One barrier and one `WAIT` on one of this master's wait connections.
    async fn wait(&self, client: &Client, tag: &str) -> Result<(), StoreError> {
        let WriteReplicas { replicas, timeout } = self.durability.setting;
        let started = Instant::now();
        let outcome = if client.state() != ClientState::Connected {
            Err(StoreError::Unavailable(
                "the replica wait connection is down".to_owned(),
            ))
        } else {
            let client = client.with_options(&Options {
                timeout: Some(timeout + self.durability.store_timeout),
                ..Default::default()
            });
            let barrier = format!("{}durable:{{{tag}}}", self.durability.prefix);
            // Both sent at once (one round trip, not two), the barrier first: `biased` polls
            // them in the order written, a fred command is queued on its connection in its
            // first poll, and Redis runs a connection's commands in order. A `WAIT` sent
            // before the barrier would cover only the writes before the previous one.
            let (set, acked) = tokio::join!(
                biased;
                client.set::<(), _, _>(
                    barrier,
                    1,
                    Some(Expiration::PX(BARRIER_TTL_MS)),
                    None,
                    false,
                ),
                client.wait::<i64>(i64::from(replicas), timeout.as_millis() as i64),
            );
            match set.and(acked) {
                Ok(acked) if acked >= i64::from(replicas) => Ok(()),
                Ok(_) => Err(StoreError::Unreplicated),
                Err(e) => Err(super::super::map_err(e)),
            }
        };
        let label = match &outcome {
            Ok(()) => "confirmed",
            Err(StoreError::Unreplicated) => "timed_out",
            Err(_) => "failed",
        };
        metrics::counter!("gateway_replica_waits_total", "outcome" => label).increment(1);
        metrics::histogram!("gateway_replica_wait_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        outcome
    }
}

/// A master's replicas as `INFO replication` shows them: those online that acknowledged the
/// replication stream within [`MAX_LAG_S`] seconds. A paused or partitioned replica stays
/// "connected" until `repl-timeout` (60 s by default), but stops acknowledging at once.
pub(crate) fn acking_replicas(info: &str) -> u32 {
    info.lines()
        .filter(|l| l.starts_with("slave") && l.contains(":ip="))
        .filter(|l| {
            let field = |name: &str| {
                l.split([':', ','])
                    .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            };
            field("state") == Some("online")
                && field("lag")
                    .and_then(|s| s.parse::<u64>().ok())
                    .is_some_and(|lag| lag <= MAX_LAG_S)
        })
        .count() as u32
}

/// Replicas acknowledge once a second; one that has not for this long is not counted.
const MAX_LAG_S: u64 = 2;

/// How long `/readyz`'s probe waits for a master's `INFO replication`: a hung master must not
/// hold up the answer for the others (it shows without a count).
pub(crate) const INFO_WAIT: Duration = Duration::from_millis(300);

#[cfg(test)]
mod tests {
    use super::acking_replicas;

    #[test]
    fn only_online_replicas_that_acknowledge_count() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
            slave0:ip=127.0.0.1,port=7001,state=online,offset=100,lag=0\r\n\
            slave1:ip=127.0.0.1,port=7002,state=online,offset=90,lag=7\r\n\
            slave2:ip=127.0.0.1,port=7003,state=wait_bgsave,offset=0,lag=0\r\n\
            master_repl_offset:100\r\n";
        assert_eq!(acking_replicas(info), 1);
        assert_eq!(acking_replicas("role:master\r\nconnected_slaves:0\r\n"), 0);
    }
}
