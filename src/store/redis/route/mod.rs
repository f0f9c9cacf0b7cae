//! Where each Redis command goes.
//!
//! Standalone: auto-pipelining fred `Pool`s — the one made at start-up, and one per worker
//! thread (`workers.rs`) — whose connected clients take the commands (none connected:
//! [`StoreError::Unavailable`] at once). Cluster: one fred client per master and the
//! gateway's own slot table. fred's clustered client re-syncs the whole topology when any one
//! node fails, and that sync fails as long as a dead master is still listed as a slot owner, so
//! every command of that client, whichever node it is for, waited for the store timeout. Here a
//! failing master stops only the requests for its own slots, and they fail at once:
//!
//! - a node whose connection is down (refused, closed), or which timed out
//!   [`cluster::TIMEOUTS_DOWN`] times in a row (a hung node), is *down*: requests for its
//!   slots answer [`StoreError::Unavailable`] without being sent, until a probe or a new
//!   topology shows its slots served;
//! - the slot table is re-read on the first `MOVED`, `ASK`, `CLUSTERDOWN`, `TRYAGAIN`, refused
//!   connection or request for a down node (at most every [`cluster::REFRESH_EVERY`]), never
//!   on a timer.
//!
//! Nothing is re-sent: a command whose outcome is unknown is a 503 to the caller.
//!
//! Here: the [`Route`] every command goes through, and the masters by name for a walk over
//! every key (`SCAN` on each in turn: [`Route::masters`], [`Route::on_master`]); [`single`]: the
//! standalone pools; [`cluster`]: the nodes, their health and the slot table; [`slots`]:
//! reading the slot table off `CLUSTER SLOTS`.

mod cluster;
pub(crate) mod replicas;
mod single;
mod slots;

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand, MultipleKeys, MultipleValues};

use crate::store::error::StoreError;
use crate::store::stall;

pub(super) use cluster::MakeClient;
use cluster::{Cluster, Node};
use replicas::{Durability, Replicas};
use single::Single;
pub(super) use single::{answers_without_tls, Failures, MakePool};

#[derive(Clone)]
pub(crate) enum Route {
    Single(Arc<Single>),
    Cluster(Arc<Cluster>),
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Single(_) => f.write_str("Route::Single"),
            Route::Cluster(_) => f.write_str("Route::Cluster"),
        }
    }
}

impl Route {
    /// `addr` names the server (`host:port`); `replicas` is its wait connection when
    /// `GATEWAY_WRITE_REPLICAS` > 0.
    pub(super) fn single(
        shared: Pool,
        make: MakePool,
        failures: Failures,
        addr: String,
        replicas: Option<Arc<Replicas>>,
    ) -> Self {
        Route::Single(Arc::new(Single::new(
            shared, make, failures, addr, replicas,
        )))
    }

    pub(super) fn cluster(
        base: Config,
        make: MakeClient,
        timeout: Duration,
        durability: Option<Durability>,
    ) -> Arc<Cluster> {
        Cluster::new(base, make, timeout, durability)
    }

    /// The client for a command whose first key is `key` (`None`: any serving node). An error
    /// at once when a call of the request timed out already ([`stall`]): a batch's next call,
    /// or an operation's second call, is not sent to wait the store timeout again.
    fn pick(&self, key: Option<&[u8]>) -> Result<(Client, Option<Arc<Node>>), Error> {
        if stall::timed_out() {
            return Err(Error::new(ErrorKind::Timeout, stall::NOT_SENT));
        }
        match self {
            Route::Single(single) => Ok((single.pick()?, None)),
            Route::Cluster(c) => {
                let node = c.pick(key)?;
                Ok((node.client.clone(), Some(node)))
            }
        }
    }

    fn observe<T>(&self, node: Option<Arc<Node>>, result: &Result<T, Error>) {
        if result
            .as_ref()
            .is_err_and(|e| e.kind() == &ErrorKind::Timeout)
        {
            stall::note_timeout();
        }
        if let (Route::Cluster(c), Some(node)) = (self, node) {
            c.observe(&node, result);
        }
    }

    /// Runs a script (`EVALSHA`, loading it on `NOSCRIPT`) on the node of its first key, its
    /// error mapped onto the store boundary as every backend wants it.
    pub(crate) async fn script<R, K, V>(
        &self,
        script: &Script,
        keys: K,
        args: V,
    ) -> Result<R, StoreError>
    where
        R: FromValue,
        K: Into<MultipleKeys> + Send,
        V: TryInto<MultipleValues> + Send,
        V::Error: Into<Error> + Send,
    {
        self.script_written(script, keys, args)
            .await
            .map(|(reply, _)| reply)
    }

    /// [`Route::script`] for a write that may create a lasting record: also the [`Written`]
    /// that waits for the replicas of the master that ran it, should the reply say it is one.
    pub(crate) async fn script_written<R, K, V>(
        &self,
        script: &Script,
        keys: K,
        args: V,
    ) -> Result<(R, Written), StoreError>
    where
        R: FromValue,
        K: Into<MultipleKeys> + Send,
        V: TryInto<MultipleValues> + Send,
        V::Error: Into<Error> + Send,
    {
        // Unwrapped rather than cloned to read the first key: cloning copied every key.
        let keys = keys.into().inner();
        let first = keys.first().map(|k| k.as_bytes());
        let (client, node) = self.pick(first).map_err(super::map_err)?;
        // The master picked for the write, not the one serving the slot after it: should it
        // fail over in between, the wait must not be asked of a replica promoted without it.
        let replicas = match (self, &node) {
            (Route::Single(single), _) => single.replicas.clone(),
            (Route::Cluster(_), Some(node)) => node.replicas.clone(),
            (Route::Cluster(_), None) => None,
        };
        let written = Written(replicas.map(|r| {
            let key = first.map(String::from_utf8_lossy).unwrap_or_default();
            (r, key.into_owned())
        }));
        let result = script.evalsha_with_reload(&client, keys, args).await;
        self.observe(node, &result);
        result.map(|reply| (reply, written)).map_err(super::map_err)
    }

    /// MGET of keys sharing one slot.
    pub(crate) async fn mget<R: FromValue>(&self, keys: Vec<String>) -> Result<R, Error> {
        let (client, node) = self.pick(keys.first().map(|k| k.as_bytes()))?;
        let result = client.mget(keys).await;
        self.observe(node, &result);
        result
    }

    pub(crate) async fn get<R: FromValue>(&self, key: &str) -> Result<R, Error> {
        let (client, node) = self.pick(Some(key.as_bytes()))?;
        let result = client.get(key).await;
        self.observe(node, &result);
        result
    }

    /// A command routed by its first argument (`ClusterHash::FirstKey`) or sent to any node.
    pub(crate) async fn custom<R, T>(&self, cmd: CustomCommand, args: Vec<T>) -> Result<R, Error>
    where
        R: FromValue,
        T: TryInto<Value> + Send,
        T::Error: Into<Error> + Send,
    {
        let args: Vec<Value> = args
            .into_iter()
            .map(|a| a.try_into().map_err(Into::into))
            .collect::<Result<_, Error>>()?;
        let key = match cmd.cluster_hash {
            ClusterHash::FirstKey => args.first().and_then(|v| v.as_bytes()),
            _ => None,
        };
        let (client, node) = self.pick(key)?;
        let result = client.custom(cmd, args).await;
        self.observe(node, &result);
        result
    }

    /// The default `INFO` (the server and modules sections among others) from any serving
    /// node: readiness holds while one master answers.
    pub(crate) async fn info(&self) -> Result<String, Error> {
        match self {
            Route::Single(_) => {
                let (client, _) = self.pick(None)?;
                client.info(Some(fred::types::InfoKind::Default)).await
            }
            Route::Cluster(c) => c.info().await,
        }
    }

    /// Each master (`host:port`) and the replicas acknowledging it, from `INFO replication`
    /// (`None`: it did not answer).
    pub(crate) async fn replication(&self) -> Vec<(String, Option<u32>)> {
        match self {
            Route::Single(single) => {
                let info = match self.pick(None) {
                    Ok((client, _)) => {
                        let info = client.info::<String>(Some(fred::types::InfoKind::Replication));
                        tokio::time::timeout(replicas::INFO_WAIT, info)
                            .await
                            .ok()
                            .and_then(Result::ok)
                    }
                    Err(_) => None,
                };
                vec![(
                    single.addr.clone(),
                    info.as_deref().map(replicas::acking_replicas),
                )]
            }
            Route::Cluster(c) => c.replication().await,
        }
    }

    /// The masters the keys live on, by `host:port`, in the order a walk over every key
    /// (`SCAN`) visits them: the server of a standalone store; each master serving slots of a
    /// Cluster, sorted, so that a walk goes on past a master that left or joined meanwhile.
    pub(crate) fn masters(&self) -> Vec<String> {
        match self {
            Route::Single(single) => vec![single.addr.clone()],
            Route::Cluster(c) => c.masters(),
        }
    }

    /// Runs `call` on master `addr` (one of [`Route::masters`]; a standalone store has one)
    /// as every command runs: not sent once a call of the request timed out, the node's health
    /// observed. `Ok(None)`: no master of that name serves slots now (it failed over or left).
    pub(crate) async fn on_master<R, F>(
        &self,
        addr: &str,
        call: impl FnOnce(Client) -> F,
    ) -> Result<Option<R>, Error>
    where
        F: std::future::Future<Output = Result<R, Error>>,
    {
        if stall::timed_out() {
            return Err(Error::new(ErrorKind::Timeout, stall::NOT_SENT));
        }
        let (client, node) = match self {
            Route::Single(single) => (single.pick()?, None),
            Route::Cluster(c) => match c.master(addr)? {
                Some(node) => (node.client.clone(), Some(node)),
                None => return Ok(None),
            },
        };
        let result = call(client).await;
        self.observe(node, &result);
        result.map(Some)
    }

    /// Cluster only: the masters that do not serve now, with their slot ranges.
    pub(crate) fn degraded(&self) -> Vec<(String, Vec<(u16, u16)>)> {
        match self {
            Route::Single(_) => Vec::new(),
            Route::Cluster(c) => c.degraded(),
        }
    }

    /// The client serving `key`'s slot, for a plain command. A down node is an error at once.
    pub(crate) fn at(&self, key: &str) -> Result<Client, StoreError> {
        self.pick(Some(key.as_bytes()))
            .map(|(client, _)| client)
            .map_err(super::map_err)
    }
}

/// Where a write ran, to wait for that master's replicas (`GATEWAY_WRITE_REPLICAS`; nothing
/// to wait for when it is 0).
#[must_use = "a lasting write is acknowledged only once its replicas hold it"]
pub(crate) struct Written(Option<(Arc<Replicas>, String)>);

impl Written {
    /// Returns once the configured replicas hold the write (and every earlier one of its
    /// master); [`StoreError::Unreplicated`] when they do not confirm in time.
    pub(crate) async fn replicated(self) -> Result<(), StoreError> {
        match self.0 {
            None => Ok(()),
            Some((replicas, key)) => replicas.confirm(&key).await,
        }
    }

    /// The answers of a grouped call, each acknowledged as [`Written::replicated`] says when
    /// `lasting` holds for it: one wait covers the whole call (it ran on one master in one
    /// step), made only when some answer is lasting, and should it fail those answers fail
    /// with it. Refusals created nothing to lose and are answered as they are.
    pub(crate) async fn settle<R>(
        self,
        answers: Vec<Result<R, StoreError>>,
        lasting: impl Fn(&R) -> bool,
    ) -> Vec<Result<R, StoreError>> {
        let lasting = |a: &Result<R, StoreError>| a.as_ref().is_ok_and(&lasting);
        if !answers.iter().any(lasting) {
            return answers;
        }
        let waited = self.replicated().await;
        answers
            .into_iter()
            .map(|a| match &waited {
                Err(e) if lasting(&a) => Err(e.clone()),
                _ => a,
            })
            .collect()
    }
}
