//! The Redis backend (fred): standalone, TLS or Cluster from `REDIS_URL`, one auto-pipelining
//! pool built once, a per-command timeout, exponential reconnects, connections made in the
//! background ([`reach`]). `fred` types never leave this module tree: errors become
//! [`StoreError`] here.

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

mod listen;
mod reach;
pub(crate) mod route;

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;

use super::error::{StoreError, Unreachable};
use super::keys::Keys;
use super::slots::{Kept, Slot, Slots};
use super::{MasterReplicas, ReadyInfo, ServerInfo, WriteReplicasInfo};
use crate::config::{Common, WriteReplicas};
use route::replicas::{Durability, Replicas};

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
    /// What a subscriber connects with, and how long it waits for Redis (the first
    /// connection too, before the log says Redis is not reachable yet).
    subscriber: (Config, Duration),
    /// `GATEWAY_WRITE_REPLICAS` and its timeout.
    write_replicas: WriteReplicas,
    /// What requests waiting in this process sleep on (the wall clock but in tests): Redis
    /// decides expiry by its own clock, the gateway only how long it waits.
    timers: crate::clock::Clock,
    /// The event channels listened to in this process, subscribed on a connection of their
    /// own (`listen.rs`), made by the first listener.
    channels: std::sync::OnceLock<Arc<super::channels::Channels>>,
}

impl RedisStore {
    /// Builds the pool and starts connecting, without waiting for a connection ([`reach`]:
    /// [`RedisStore::reached`] says when Redis answers). Fails only for a `REDIS_URL` fred
    /// cannot use.
    pub async fn connect(url: &str, settings: &Common) -> Result<Self, StoreError> {
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
        let durability = (settings.write_replicas.replicas > 0).then(|| Durability {
            setting: settings.write_replicas,
            prefix: settings.key_prefix.as_str().into(),
            store_timeout: timeout,
        });
        let pool = if cluster {
            // One client per master, routed by the gateway's own slot table: fred's clustered
            // client stalls every command while any one node is unreachable.
            let make: route::MakeClient = Arc::new(move |config: Config| builder(config).build());
            let c = route::Route::cluster(config, make, timeout, durability);
            c.seed();
            route::Route::Cluster(c)
        } else {
            let addr = config
                .server
                .hosts()
                .first()
                .map(|s| format!("{}:{}", s.host, s.port))
                .unwrap_or_default();
            let make: route::MakePool =
                Arc::new(move |size: usize| builder(config.clone()).build_pool(size));
            let pool = make(settings.redis_pool_size)
                .map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?;
            let failures = route::Failures::of(&pool);
            pool.connect();
            // A connection of its own for the waits: `WAIT` blocks the connection it is sent
            // on (`route/replicas.rs`).
            let replicas = match durability {
                Some(d) => Some(
                    Replicas::new(|| make(1).map(|pool| pool.next().clone()), d)
                        .map_err(|e| StoreError::Internal(format!("REDIS_URL: {e}")))?,
                ),
                None => None,
            };
            route::Route::single(pool, make, failures, addr, replicas)
        };
        Ok(Self {
            pool,
            keys: Keys::new(&settings.key_prefix),
            cluster,
            inner: Arc::new(Inner {
                slots: Slots::default(),
                subscriber: (subscriber_config, timeout.max(Duration::from_secs(2))),
                write_replicas: settings.write_replicas,
                timers: settings.clock.clone(),
                channels: std::sync::OnceLock::new(),
            }),
        })
    }

    /// The clock requests waiting in this process sleep on.
    pub(crate) fn timers(&self) -> &crate::clock::Clock {
        &self.inner.timers
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

    /// The event channels of this store: listening to one subscribes it (once per process).
    pub(crate) fn channels(&self) -> &Arc<super::channels::Channels> {
        self.inner.channels.get_or_init(|| listen::start(self))
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
        // The default sections hold the server's and the modules'; at most once a second.
        let info: String = self.pool.info().await.map_err(map_err)?;
        let redis_version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_owned());
        Ok(ReadyInfo {
            backend: self.backend(),
            redis_version,
            server: ServerInfo::from_info(&info),
            degraded: self.degraded(),
            write_replicas: Some(self.write_replicas().await),
        })
    }

    /// `GATEWAY_WRITE_REPLICAS` and, when above 0, each master's replicas, asked now (at 0 the
    /// probe stays the one `INFO` it was).
    async fn write_replicas(&self) -> WriteReplicasInfo {
        let WriteReplicas { replicas, timeout } = self.inner.write_replicas;
        let masters: Vec<MasterReplicas> = if replicas == 0 {
            Vec::new()
        } else {
            self.pool
                .replication()
                .await
                .into_iter()
                .map(|(node, replicas)| MasterReplicas { node, replicas })
                .collect()
        };
        WriteReplicasInfo {
            required: replicas,
            timeout_ms: timeout.as_millis() as u64,
            degraded: replicas > 0
                && masters
                    .iter()
                    .any(|m| m.replicas.is_none_or(|n| n < replicas)),
            masters,
        }
    }

    /// The start-up warning of a `GATEWAY_WRITE_REPLICAS` some master cannot meet now: every
    /// lasting write to its slots would answer 503.
    async fn warn_few_replicas(&self) {
        let required = self.inner.write_replicas.replicas;
        if required == 0 {
            return;
        }
        for (node, replicas) in self.pool.replication().await {
            match replicas {
                Some(n) if n >= required => {}
                Some(n) => tracing::warn!(
                    node,
                    replicas = n,
                    "GATEWAY_WRITE_REPLICAS={required} but this master has {n} replicas \
                     acknowledging it: its lasting writes answer 503 until it has {required}"
                ),
                None => tracing::warn!(
                    node,
                    "GATEWAY_WRITE_REPLICAS={required}: could not ask this master for its \
                     replicas; writes answer 503 while it has fewer"
                ),
            }
        }
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

/// The start-up line of a Redis that does not serve yet: the reason code (as `/readyz` gives
/// it), what to do about it, and fred's own words.
fn warn_unreachable(e: &Error) {
    let (reason, hint) = match classify(e) {
        StoreError::Unreachable(why) => (why.reason(), why.hint()),
        StoreError::Timeout => (
            "timeout",
            "Redis did not answer in time: check REDIS_URL's host and port, and the network",
        ),
        other => (other.reason(), "check REDIS_URL and that Redis runs"),
    };
    tracing::warn!(reason, error = %e, "Redis is not reachable yet: {hint}; retrying in the background");
}

/// The text of a script's reply value: a string, bytes (lossily) or an integer; `None` for
/// nil, false or anything else.
pub(crate) fn text(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s.to_string()),
        Some(Value::Bytes(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        Some(Value::Integer(i)) => Some(i.to_string()),
        _ => None,
    }
}

/// Maps a fred error onto the store boundary: timeouts and connection trouble are 503s,
/// anything else is a bug on our side.
pub(crate) fn map_err(e: Error) -> StoreError {
    // Not a failed Redis call: it was never sent.
    if e.details() == super::stall::NOT_SENT {
        return StoreError::Timeout;
    }
    let mapped = classify(&e);
    let kind = match mapped {
        StoreError::Timeout => "timeout",
        StoreError::Unavailable(_) | StoreError::Unreachable(_) | StoreError::Unreplicated => {
            "unavailable"
        }
        StoreError::Unsupported(_) => "missing_module",
        StoreError::Internal(_) => "internal",
    };
    metrics::counter!("gateway_store_errors_total", "kind" => kind).increment(1);
    mapped
}

fn classify(e: &Error) -> StoreError {
    if let Some(why) = unreachable(e) {
        return StoreError::Unreachable(why);
    }
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
        _ => match unknown_command(e.details()) {
            Some(command) => StoreError::Unsupported(command),
            None => StoreError::Internal(e.to_string()),
        },
    }
}

/// The command of an `ERR unknown command 'BF.MEXISTS', with args beginning with: ...` reply
/// (Redis and Valkey word it alike): what a server without a module answers to its commands.
fn unknown_command(details: &str) -> Option<String> {
    let rest = details.split_once("unknown command '")?.1;
    Some(rest.split_once('\'')?.0.to_owned())
}

/// Why connecting to Redis fails, when fred's error tells. Only the password has a kind of its
/// own (`Auth`, from a `NOAUTH` or `WRONGPASS` reply); the rest are read from the text, as
/// fred keeps no more than that: a refused TCP connect is its `IO` kind with the `io::Error`
/// in `{:?}` form (`kind: ConnectionRefused`), a TLS handshake that fails is the same `IO`
/// kind around rustls' error (tokio-rustls reports it as `InvalidData`, naming the TLS
/// message or alert), and a database the server lacks is the plain `ERR` reply to `SELECT`.
pub(crate) fn unreachable(e: &Error) -> Option<Unreachable> {
    let details = e.details();
    match e.kind() {
        ErrorKind::Auth => Some(Unreachable::AuthenticationFailed),
        ErrorKind::Tls => Some(Unreachable::TlsFailed),
        ErrorKind::IO if details.contains("ConnectionRefused") => {
            Some(Unreachable::ConnectionRefused)
        }
        ErrorKind::IO if details.contains("InvalidData") => Some(Unreachable::TlsFailed),
        _ if details.starts_with("ERR DB index is out of range")
            || details.starts_with("ERR invalid DB index") =>
        {
            Some(Unreachable::UnknownDatabase)
        }
        // Replies to a command on a connection made before the password was required.
        _ if details.starts_with("NOAUTH") || details.starts_with("WRONGPASS") => {
            Some(Unreachable::AuthenticationFailed)
        }
        _ => None,
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
        // A blocked command (a durable write's `WAIT`) on a master that learnt, when it woke,
        // that a replica took its place: the write's fate is unknown, as in an outage.
        "UNBLOCKED",
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
        let demoted = Error::new(
            ErrorKind::Unknown,
            "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
        );
        assert!(matches!(classify(&demoted), StoreError::Unavailable(_)));
        let other = Error::new(ErrorKind::Unknown, "something else");
        assert!(matches!(classify(&other), StoreError::Internal(_)));
        let parse = Error::new(ErrorKind::Parse, "Failed to route command.");
        assert!(matches!(classify(&parse), StoreError::Internal(_)));
    }

    #[test]
    fn a_command_the_server_lacks_is_named() {
        let redis7 = "ERR unknown command 'BF.MEXISTS', with args beginning with: 'k' 'a' ";
        let e = Error::new(ErrorKind::Unknown, redis7);
        assert!(
            matches!(classify(&e), StoreError::Unsupported(ref c) if c == "BF.MEXISTS"),
            "{e:?}"
        );
        let e = Error::new(ErrorKind::Unknown, "ERR unknown subcommand 'X'");
        assert!(matches!(classify(&e), StoreError::Internal(_)));
    }

    #[test]
    fn why_a_connection_fails_is_read_from_freds_errors() {
        let refused: Error = std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into();
        let cases = [
            (refused, Some(Unreachable::ConnectionRefused)),
            (
                Error::new(ErrorKind::Auth, "NOAUTH Authentication required."),
                Some(Unreachable::AuthenticationFailed),
            ),
            (
                Error::new(ErrorKind::Unknown, "ERR DB index is out of range"),
                Some(Unreachable::UnknownDatabase),
            ),
            (
                Error::new(ErrorKind::Tls, "InvalidCertificate(UnknownIssuer)"),
                Some(Unreachable::TlsFailed),
            ),
            (Error::new(ErrorKind::Timeout, "Request timed out."), None),
            (Error::new(ErrorKind::IO, "Redis is not connected"), None),
            (Error::new(ErrorKind::Unknown, "ERR something else"), None),
        ];
        for (e, why) in cases {
            assert_eq!(unreachable(&e), why, "{e:?}");
        }
    }
}
