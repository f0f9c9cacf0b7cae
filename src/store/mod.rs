//! What every backend shares, and no domain: the [`Store`] chosen at start-up (the in-memory
//! default or Redis: standalone, TLS, Cluster), its connections and Cluster routing
//! (`redis/`), group commit, per-store domain state ([`slots`]), the key prefix and hash tags
//! ([`keys`]) and [`StoreError`].
//!
//! Each domain keeps its own backends in its folder (`src/<domain>/memory.rs`, `redis.rs` and
//! its `.lua` scripts) and declares its store trait with [`store_trait!`], which also writes
//! the trait's forwarding from `Store` to the active backend: a new store method is written in
//! its domain only (docs/design.md "Shape").
//!
//! - [`error`]: [`StoreError`], a leaf module: the domains' traits name it without depending
//!   on this aggregator
//! - [`stall`]: a request whose store call timed out sends no more calls (a stalled store
//!   costs a request one store timeout, not one per call)
//!
//! Store methods carry their domain's name (`checkin_record`, `uv_union`, `seckill_orders`,
//! `dedup_check`, ...), since every trait lands on the same `Store`.

pub mod channels;
pub mod error;
pub(crate) mod group;
pub mod keys;
pub mod memory;
pub mod redis;
pub(crate) mod slots;
pub(crate) mod stall;

pub use error::StoreError;

use crate::config::{Common, StoreChoice};

/// What `/readyz` reports about the store.
#[derive(Debug, Clone)]
pub struct ReadyInfo {
    pub backend: &'static str,
    pub redis_version: Option<String>,
    /// Redis only: which server answers (Redis or Valkey), its own version and its modules.
    pub server: Option<ServerInfo>,
    /// Cluster masters that do not serve now (the others still do).
    pub degraded: Vec<DownNode>,
    /// Redis only: `GATEWAY_WRITE_REPLICAS` and each master's replicas.
    pub write_replicas: Option<WriteReplicasInfo>,
}

/// The server behind the store as `/readyz` shows it: Valkey answers `redis_version` with the
/// Redis version it is compatible with (7.2.4), so its own name and version are told apart.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ServerInfo {
    /// `redis` or `valkey`.
    #[schema(example = "redis")]
    pub name: String,
    /// The server's own version (Valkey's `valkey_version`, not the Redis version it emulates).
    #[schema(example = "7.0.15")]
    pub version: String,
    /// The modules loaded (`bf` for RedisBloom or valkey-bloom); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
}

impl ServerInfo {
    /// Reads an `INFO` reply (the `server` and `modules` sections); `None` when it names no
    /// version.
    pub fn from_info(info: &str) -> Option<Self> {
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().to_owned())
        };
        let name = field("server_name").unwrap_or_else(|| "redis".to_owned());
        let version = match name.as_str() {
            "redis" => field("redis_version")?,
            other => field(&format!("{other}_version")).or_else(|| field("redis_version"))?,
        };
        // `module:name=bf,ver=20802,api=1,...`
        let modules = info
            .lines()
            .filter_map(|l| l.strip_prefix("module:name="))
            .map(|rest| rest.split(',').next().unwrap_or(rest).trim().to_owned())
            .collect();
        Some(Self {
            name,
            version,
            modules,
        })
    }
}

/// `GATEWAY_WRITE_REPLICAS` as `/readyz` shows it: the setting and each master's replicas
/// (docs/operations.md "Durable writes").
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct WriteReplicasInfo {
    /// Replicas that must hold a lasting write before it is acknowledged (0: none).
    pub required: u32,
    /// How long a write waits for them, in milliseconds.
    pub timeout_ms: u64,
    /// Each master, with the replicas that are online and acknowledged it within the last 2 s
    /// (asked only when `required` is above 0).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masters: Vec<MasterReplicas>,
    /// A master has fewer replicas than `required` (or did not say): lasting writes to its
    /// slots answer 503 until it has them again.
    pub degraded: bool,
}

/// One master and its replicas.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct MasterReplicas {
    /// `host:port`.
    pub node: String,
    /// Online replicas acknowledging it; absent when the master did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
}

/// A Cluster master that does not serve: its `host:port` and the slot ranges it owns
/// (inclusive). Requests for keys in those slots answer 503 until a replica takes over.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct DownNode {
    pub node: String,
    pub slots: Vec<[u16; 2]>,
}

/// The backend the gateway runs on, a cheap-clone handle.
#[derive(Debug, Clone)]
pub enum Store {
    Memory(memory::MemoryStore),
    Redis(redis::RedisStore),
}

/// Calls the same method on whichever backend is active. With an operation name (`"uv.record"`)
/// the call is also timed per operation and, when traces are exported, runs in its own span.
macro_rules! dispatch {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            $crate::store::Store::Memory($s) => $call,
            $crate::store::Store::Redis($s) => $call,
        }
    };
    ($self:ident, _, $s:ident => $call:expr) => {
        $crate::store::dispatch!($self, $s => $call)
    };
    ($self:ident, $op:literal, $s:ident => $call:expr) => {{
        static DURATION: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
        // Boxed: a backend call's future is large (the Redis client's state, ~15 KB for a UV
        // add), and unboxed it sat inside every future around it — the handler's, the
        // router's — each moved whole into the next box (memmove was 4-8% of the gateway's CPU
        // in perf).
        let call = Box::pin(async move {
            match $self {
                $crate::store::Store::Memory($s) => $call,
                $crate::store::Store::Redis($s) => $call,
            }
        });
        $crate::store::observed(&DURATION, $op, call).await
    }};
}

pub(crate) use dispatch;

/// Declares a domain's store trait and writes its forwarding from [`Store`] to the active
/// backend, so a method is written once here and once per backend (in the domain's
/// `memory.rs` and `redis.rs`). Each method names the operation it is timed as
/// (`gateway_store_call_duration_seconds{op}`), or `_` for one that is not a store call.
///
/// A macro rather than a hand-written `impl` per domain: the backends are a closed set chosen
/// at start-up and the traits use `async fn`, so they cannot be `dyn` objects, and a generic
/// `AppState<S>` would carry a type parameter through every handler; the generated `match`
/// costs what the hand-written one did.
macro_rules! store_trait {
    (
        $(#[$trait_meta:meta])*
        $vis:vis trait $trait:ident { $($methods:tt)* }
    ) => {
        $crate::store::store_trait!(@method [$(#[$trait_meta])* $vis trait $trait] $trait [] []
            $($methods)*);
    };
    // Forwarded to the backend.
    (@method $head:tt $trait:ident [$($decl:tt)*] [$($fwd:tt)*]
        $(#[$meta:meta])*
        async fn $name:ident(&$self:tt $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:ty = $op:tt;
        $($rest:tt)*
    ) => {
        $crate::store::store_trait!(@method $head $trait
            [$($decl)* $(#[$meta])* async fn $name(&self $(, $arg: $ty)*) -> $ret;]
            [$($fwd)* async fn $name(&self $(, $arg: $ty)*) -> $ret {
                $crate::store::dispatch!(self, $op, s => s.$name($($arg),*).await)
            }]
            $($rest)*);
    };
    // Forwarded to the backend, which may keep the default body.
    (@method $head:tt $trait:ident [$($decl:tt)*] [$($fwd:tt)*]
        $(#[$meta:meta])*
        async fn $name:ident(&$self:tt $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:ty = $op:tt $body:block
        $($rest:tt)*
    ) => {
        $crate::store::store_trait!(@method $head $trait
            [$($decl)* $(#[$meta])* async fn $name(&$self $(, $arg: $ty)*) -> $ret $body]
            [$($fwd)* async fn $name(&self $(, $arg: $ty)*) -> $ret {
                $crate::store::dispatch!(self, $op, s => s.$name($($arg),*).await)
            }]
            $($rest)*);
    };
    // Provided, built on the others: `Store` keeps the default too.
    (@method $head:tt $trait:ident [$($decl:tt)*] [$($fwd:tt)*]
        $(#[$meta:meta])*
        async fn $name:ident(&$self:tt $(, $arg:ident : $ty:ty)* $(,)?) -> $ret:ty $body:block
        $($rest:tt)*
    ) => {
        $crate::store::store_trait!(@method $head $trait
            [$($decl)* $(#[$meta])* async fn $name(&$self $(, $arg: $ty)*) -> $ret $body]
            [$($fwd)*]
            $($rest)*);
    };
    (@method [$($head:tt)*] $trait:ident [$($decl:tt)*] [$($fwd:tt)*]) => {
        $($head)* { $($decl)* }

        impl $trait for $crate::store::Store { $($fwd)* }
    };
}
pub(crate) use store_trait;

/// Times one store call as `gateway_store_call_duration_seconds{op}` and, when traces are
/// exported, wraps it in a `store` span named for the operation. `op` is a fixed name, so the
/// label set stays bounded.
///
/// A call of a request whose earlier call timed out is not made ([`stall`]); one that times
/// out says so for the request's later calls.
pub(crate) async fn observed<T>(
    duration: &'static std::sync::OnceLock<metrics::Histogram>,
    op: &'static str,
    call: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    use tracing::Instrument;
    if stall::timed_out() {
        return Err(StoreError::Timeout);
    }
    let started = std::time::Instant::now();
    let out = if crate::telemetry::tracing_on() {
        call.instrument(tracing::info_span!("store", otel.name = op, op))
            .await
    } else {
        call.await
    };
    // The handle is resolved once per call site, the recorder installed first; the macro
    // built and hashed a labelled key on every call.
    duration
        .get_or_init(|| {
            crate::telemetry::metrics();
            metrics::histogram!("gateway_store_call_duration_seconds", "op" => op)
        })
        .record(started.elapsed().as_secs_f64());
    stall::note(&out);
    out
}

impl Store {
    /// Builds the backend `settings` ask for and, for Redis, starts connecting without waiting
    /// for it ([`Store::reached`]): Redis being down is not an error here, the gateway starts,
    /// reports not ready, and serves once the client connects.
    pub async fn open(settings: &Common) -> Result<Self, StoreError> {
        match &settings.store {
            StoreChoice::Memory => Ok(Self::Memory(memory::MemoryStore::new(settings))),
            StoreChoice::Redis(url) => Ok(Self::Redis(
                redis::RedisStore::connect(url, settings).await?,
            )),
        }
    }

    /// Returns once the store answers, however long that takes (the memory store: at once).
    pub async fn reached(&self) {
        match self {
            Self::Memory(_) => {}
            Self::Redis(s) => s.reached().await,
        }
    }

    /// Why the store is not reached yet (a reason `/readyz` and a 503 can give).
    pub fn unreached(&self) -> StoreError {
        match self {
            Self::Memory(_) => StoreError::Unavailable("the store is starting".to_owned()),
            Self::Redis(s) => s.unreached(),
        }
    }

    /// Gives the calling worker thread its own Redis connections (`workers.rs`), used once
    /// they are up; the memory store is one shared value and needs none. Never waits.
    pub fn attach_worker(&self, size: usize) -> Result<(), StoreError> {
        match self {
            Self::Memory(_) => Ok(()),
            Self::Redis(s) => s.attach_worker(size),
        }
    }

    /// `memory`, `redis` or `redis-cluster`.
    pub fn backend(&self) -> &'static str {
        dispatch!(self, s => s.backend())
    }

    /// Asks the store whether it answers.
    pub async fn ready(&self) -> Result<ReadyInfo, StoreError> {
        dispatch!(self, s => s.ready().await)
    }

    /// Cluster masters that do not serve now, from the client's own view of the topology (no
    /// store call, so `/readyz` shows it current between its probes of the store).
    pub fn degraded(&self) -> Vec<DownNode> {
        match self {
            Self::Memory(_) => Vec::new(),
            Self::Redis(s) => s.degraded(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ServerInfo;

    #[test]
    fn valkey_is_told_apart_from_the_redis_version_it_reports() {
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n\
                      # Modules\r\nmodule:name=bf,ver=1,api=1,filters=0,usedby=[],using=[],options=[]\r\n";
        let info = ServerInfo::from_info(valkey).unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("valkey", "8.1.1")
        );
        assert_eq!(info.modules, ["bf"]);
        let redis = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n# Modules\r\n";
        let info = ServerInfo::from_info(redis).unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("redis", "7.0.15")
        );
        assert!(info.modules.is_empty());
        assert_eq!(ServerInfo::from_info("# Server\r\n"), None);
    }
}
