//! Reaching Redis, from start-up on, without holding anything up: [`RedisStore::connect`] only
//! starts the connections, the gateway listens and answers its probes at once, and
//! [`RedisStore::reached`] (awaited in the background by `crate::startup`) returns once Redis
//! answers. A worker's own pool is made the same way ([`RedisStore::attach_worker`]).
//!
//! Why not wait before listening: a Redis that is down or slow at start would leave the port
//! silent for the whole wait, `/healthz` included, and a liveness probe with a shorter timeout
//! would restart a gateway that was only waiting for its store.

use std::time::Duration;

use fred::prelude::*;

use super::route::{self, Failures, Route};
use super::{classify, warn_unreachable, RedisStore};
use crate::store::error::StoreError;

/// How often a wait for the first connection looks at the clients' state again.
const LOOK_EVERY: Duration = Duration::from_millis(50);

impl RedisStore {
    /// Returns once Redis answers, however long that takes: a standalone server once a
    /// connection of the shared pool is up (and the wait connections of
    /// `GATEWAY_WRITE_REPLICAS`, for at most the first-connection wait), a Cluster once its
    /// slot table is read and its masters are connected (for at most that wait). A Redis that
    /// does not answer within the wait is said once in the log, with why; fred keeps retrying.
    /// Then a `GATEWAY_WRITE_REPLICAS` some master cannot meet is said, in the background.
    pub(crate) async fn reached(&self) {
        let wait = self.subscriber().1;
        match &self.pool {
            Route::Single(single) => {
                let pool = single.shared();
                if let Some(e) = first_connection(pool, single.failures(), wait).await {
                    if e.kind() == &ErrorKind::Timeout
                        && self.subscriber().0.tls.is_some()
                        && route::answers_without_tls(&self.subscriber().0, wait).await
                    {
                        single.failures().plain_server();
                    }
                    warn_unreachable(&single.connect_failure().unwrap_or(e));
                    connected(pool).await;
                }
                if let Some(r) = &single.replicas {
                    r.connected(wait).await;
                }
            }
            Route::Cluster(c) => c.start(wait).await,
        }
        tracing::info!(cluster = self.cluster, "connected to Redis");
        // A task of its own: the API need not wait for a log line.
        let store = self.clone();
        tokio::spawn(async move { store.warn_few_replicas().await });
    }

    /// Why the store is not reached yet, as a 503 and `/readyz` give it: the reason of the
    /// last failed attempt to connect when it names one, else plain `unavailable`.
    pub(crate) fn unreached(&self) -> StoreError {
        let failure = match &self.pool {
            Route::Single(single) => single.connect_failure().map(|e| classify(&e)),
            Route::Cluster(_) => None,
        };
        match failure {
            Some(e @ (StoreError::Unreachable(_) | StoreError::Timeout)) => e,
            _ => StoreError::Unavailable("Redis is not reached yet".to_owned()),
        }
    }

    /// Gives the calling thread's runtime its own pool of `size` connections (standalone
    /// Redis; a Cluster keeps its per-master clients), which this thread's commands use once
    /// one of them is up: each worker of `workers.rs` talks to Redis over connections driven
    /// by its own runtime. Until then they take the shared pool's, so nothing waits for it.
    pub fn attach_worker(&self, size: usize) -> Result<(), StoreError> {
        let Route::Single(single) = &self.pool else {
            return Ok(());
        };
        let pool = single
            .make_pool(size.max(1))
            .map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?;
        let failures = Failures::of(&pool);
        pool.connect();
        single.attach(pool.clone());
        let (single, wait) = (single.clone(), self.subscriber().1);
        tokio::spawn(async move {
            // Said only when the shared pool connects: else its own warning says it already.
            if let Some(e) = first_connection(&pool, &failures, wait).await {
                if single.connect_failure().is_none() {
                    warn_unreachable(&e);
                }
            }
        });
        Ok(())
    }
}

/// Waits up to `wait` for a client of `pool` to connect: `None` once one has, else why not yet
/// (fred keeps retrying in the background). `failures` must listen to `pool` already: with
/// `fail_fast` off, an attempt's own error is the only place that says why (a refused port and
/// a refused password both looked like "timed out").
async fn first_connection(pool: &Pool, failures: &Failures, wait: Duration) -> Option<Error> {
    match tokio::time::timeout(wait, connected(pool)).await {
        Ok(()) => None,
        Err(_) => Some(
            failures
                .last(pool)
                .unwrap_or_else(|| Error::new(ErrorKind::Timeout, "no answer in time")),
        ),
    }
}

/// Until a client of `pool` is connected (any one will do: requests take whichever is up).
/// The state is looked at again every [`LOOK_EVERY`]: fred's `wait_for_connect` reads it, then
/// subscribes to the next attempt's result, so a connection made in between would be waited
/// for until the next reconnect.
async fn connected(pool: &Pool) {
    let clients = pool.clients();
    while !clients.iter().any(|c| c.state() == ClientState::Connected) {
        let next = clients.iter().map(|c| Box::pin(c.wait_for_connect()));
        // An error at once (a connection task that gave up) must not make this spin.
        if let Ok((Err(_), ..)) =
            tokio::time::timeout(LOOK_EVERY, futures::future::select_all(next)).await
        {
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }
}
