//! The Redis backend (fred): standalone, TLS or Cluster from `REDIS_URL`, one auto-pipelining
//! pool built once, a per-command timeout, exponential reconnects. `fred` types never leave
//! this module tree: errors become [`StoreError`] here.

/// A script made of a shared head (`queue_common.lua`, `gcra_common.lua`, `dedup_common.lua`,
/// `checkin_common.lua`: the functions a family of scripts shares, since Redis scripts cannot
/// import) and one script's own body, built once.
macro_rules! script_after {
    ($head:literal, $file:literal) => {
        std::sync::LazyLock::new(|| {
            fred::types::scripts::Script::from_lua(concat!(
                include_str!($head),
                include_str!($file)
            ))
        })
    };
}

pub(crate) use script_after;

pub(crate) mod route;

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;

use super::error::StoreError;
use super::keys::Keys;
use super::slots::{Kept, Slot, Slots};
use super::ReadyInfo;
use crate::config::Settings;

/// Cheap-clone handle to the Redis clients.
#[derive(Debug, Clone)]
pub struct RedisStore {
    /// Standalone: one pool; Cluster: one client per master (see `route/`).
    pub(crate) pool: route::Route,
    pub(crate) keys: Keys,
    pub(crate) cluster: bool,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Each domain's state in this store (its group commits, subscribers, caches).
    slots: Slots,
    /// What a subscriber connects with, and how long it waits for Redis.
    subscriber: (Config, Duration),
}

impl RedisStore {
    /// Builds the pool and starts connecting. Waits up to the store timeout for the first
    /// connection; if Redis is down the gateway still starts, and fred keeps reconnecting.
    pub async fn connect(url: &str, settings: &Settings) -> Result<Self, StoreError> {
        let mut config =
            Config::from_url(url).map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?;
        // Retry the first connection like any later one: a gateway started before Redis must
        // come up not-ready and recover, not crash-loop.
        config.fail_fast = false;
        let cluster = config.server.is_clustered();
        let subscriber_config = config.clone();
        let timeout = settings.store_timeout;
        let policy = ReconnectPolicy::new_exponential(0, 50, 2_000, 2);
        let builder = move |config: Config| {
            let mut b = Builder::from_config(config);
            b.with_performance_config(|perf| {
                perf.default_command_timeout = timeout;
            })
            .with_connection_config(|conn| {
                conn.connection_timeout = timeout;
                conn.internal_command_timeout = timeout;
                // One attempt: after a reconnect fred would re-send an in-flight command, and for
                // a purchase, a restock, a page view or a limiter charge that is a second effect
                // (docs/api.md: no blind retry). A write whose outcome is unknown is a 503, and the
                // client retries it safely with its Idempotency-Key.
                conn.max_command_attempts = 1;
                conn.tcp = TcpConfig {
                    nodelay: Some(true),
                    ..Default::default()
                };
            })
            .set_policy(policy.clone());
            b
        };
        let wait = timeout.max(Duration::from_secs(2));
        let pool = if cluster {
            // One client per master, routed by the gateway's own slot table: fred's clustered
            // client stalls every command while any one node is unreachable (issue 21).
            let make: route::MakeClient = Arc::new(move |config: Config| builder(config).build());
            let c = route::Route::cluster(config, make, timeout);
            if c.start(wait).await {
                tracing::info!(cluster, "connected to Redis");
            } else {
                tracing::warn!("Redis is not reachable yet; retrying in the background");
            }
            route::Route::Cluster(c)
        } else {
            let make: route::MakePool =
                Arc::new(move |size: usize| builder(config.clone()).build_pool(size));
            let pool = make(settings.redis_pool_size)
                .map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?;
            if connect_pool(&pool, wait).await {
                tracing::info!(cluster, "connected to Redis");
            }
            route::Route::single(pool, make)
        };
        let store = Self {
            pool,
            keys: Keys::new(&settings.key_prefix),
            cluster,
            inner: Arc::new(Inner {
                slots: Slots::default(),
                subscriber: (subscriber_config, timeout.max(Duration::from_secs(2))),
            }),
        };
        Ok(store)
    }

    /// Gives the calling thread's runtime its own pool of `size` connections (standalone
    /// Redis; a Cluster keeps its per-master clients), which this thread's commands then use:
    /// each worker of `workers.rs` talks to Redis over connections driven by its own runtime.
    pub async fn attach_worker(&self, size: usize, wait: Duration) -> Result<(), StoreError> {
        let route::Route::Single(single) = &self.pool else {
            return Ok(());
        };
        let pool = single
            .make_pool(size.max(1))
            .map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?;
        connect_pool(&pool, wait).await;
        single.attach(pool);
        Ok(())
    }

    pub fn backend(&self) -> &'static str {
        if self.cluster {
            "redis-cluster"
        } else {
            "redis"
        }
    }

    /// This store's `T`, made on first use.
    pub(crate) fn kept<T: Kept + Default>(&self, slot: &'static Slot<T>) -> &T {
        self.inner.slots.get(slot)
    }

    /// What a subscriber of this store connects with, and how long it waits for a connection.
    pub(crate) fn subscriber(&self) -> &(Config, Duration) {
        &self.inner.subscriber
    }

    /// A handle that does not keep the store's state alive (for background tasks).
    pub(crate) fn downgrade(&self) -> WeakRedisStore {
        WeakRedisStore {
            pool: self.pool.clone(),
            keys: self.keys.clone(),
            cluster: self.cluster,
            inner: Arc::downgrade(&self.inner),
        }
    }

    pub async fn ready(&self) -> Result<ReadyInfo, StoreError> {
        let info: String = self.pool.info().await.map_err(map_err)?;
        let redis_version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_owned());
        Ok(ReadyInfo {
            backend: self.backend(),
            redis_version,
            degraded: self.degraded(),
        })
    }

    /// Cluster masters that do not serve now, as this client sees the topology.
    pub fn degraded(&self) -> Vec<super::DownNode> {
        self.pool
            .degraded()
            .into_iter()
            .map(|(node, ranges)| super::DownNode {
                node,
                slots: ranges.into_iter().map(|(a, b)| [a, b]).collect(),
            })
            .collect()
    }
}

/// A [`RedisStore`] that a background task holds without keeping it alive.
#[derive(Debug, Clone)]
pub(crate) struct WeakRedisStore {
    pool: route::Route,
    keys: Keys,
    cluster: bool,
    inner: std::sync::Weak<Inner>,
}

impl WeakRedisStore {
    pub(crate) fn upgrade(&self) -> Option<RedisStore> {
        Some(RedisStore {
            pool: self.pool.clone(),
            keys: self.keys.clone(),
            cluster: self.cluster,
            inner: self.inner.upgrade()?,
        })
    }
}

/// Starts `pool` connecting and waits up to `wait` for it; `false` (logged) when Redis is not
/// reachable yet, which fred keeps retrying in the background.
async fn connect_pool(pool: &Pool, wait: Duration) -> bool {
    pool.connect();
    let e = match tokio::time::timeout(wait, pool.wait_for_connect()).await {
        Ok(Ok(())) => return true,
        Ok(Err(e)) => e.to_string(),
        Err(_) => "timed out".to_owned(),
    };
    tracing::warn!(error = %e, "Redis is not reachable yet; retrying in the background");
    false
}

/// Maps a fred error onto the store boundary: timeouts and connection trouble are 503s,
/// anything else is a bug on our side.
pub(crate) fn map_err(e: Error) -> StoreError {
    let mapped = classify(&e);
    let kind = match mapped {
        StoreError::Timeout => "timeout",
        StoreError::Unavailable(_) => "unavailable",
        StoreError::Internal(_) => "internal",
    };
    metrics::counter!("gateway_store_errors_total", "kind" => kind).increment(1);
    mapped
}

fn classify(e: &Error) -> StoreError {
    match e.kind() {
        ErrorKind::Timeout => StoreError::Timeout,
        ErrorKind::IO
        | ErrorKind::Canceled
        | ErrorKind::Cluster
        | ErrorKind::Backpressure
        | ErrorKind::Routing => StoreError::Unavailable(e.to_string()),
        _ if is_transient(e.details()) => StoreError::Unavailable(e.to_string()),
        // fred found no connection to write on: it was dropped (Redis went away) between our
        // pick of a connected client and fred's router taking the command. fred files this one
        // as `Unknown`; it is an outage, not a bug (a rare 500 in tests/reliability.rs).
        ErrorKind::Unknown if e.details() == "Failed to route command." => {
            StoreError::Unavailable(e.to_string())
        }
        _ => StoreError::Internal(e.to_string()),
    }
}

/// Replies Redis gives while it cannot serve yet (loading, failing over, cluster down).
fn is_transient(details: &str) -> bool {
    [
        "LOADING",
        "CLUSTERDOWN",
        "TRYAGAIN",
        "MASTERDOWN",
        "READONLY",
        "BUSY",
    ]
    .iter()
    .any(|p| details.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unroutable_command_is_an_outage() {
        let unroutable = Error::new(ErrorKind::Unknown, "Failed to route command.");
        assert!(matches!(classify(&unroutable), StoreError::Unavailable(_)));
        let loading = Error::new(ErrorKind::Unknown, "LOADING Redis is loading");
        assert!(matches!(classify(&loading), StoreError::Unavailable(_)));
        let other = Error::new(ErrorKind::Unknown, "something else");
        assert!(matches!(classify(&other), StoreError::Internal(_)));
        let parse = Error::new(ErrorKind::Parse, "Failed to route command.");
        assert!(matches!(classify(&parse), StoreError::Internal(_)));
    }
}
