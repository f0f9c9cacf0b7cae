//! Store backends: the in-memory default and Redis (standalone, TLS, Cluster), and the one
//! [`Store`] enum that implements every domain's store trait by dispatching to the backend chosen
//! at start-up.
//!
//! - [`error`]: [`StoreError`], a leaf module: the domains' traits name it without depending
//!   on this aggregator
//! - `dispatch.rs`: `impl <Domain>Store for Store`, one `match` per method, for every domain
//! - [`keys`]: the only place keys are spelled (prefix, `kind:{tag}:rest`)
//! - [`memory`] and [`redis`]: one file per domain implementing its trait; the Redis side keeps
//!   each atomic operation in a `.lua` file beside its caller, and `fred` types never leave it
//!
//! Store methods carry their domain's name (`checkin_record`, `uv_union`, `seckill_orders`,
//! `dedup_check`, ...), since every trait lands on the same `Store`.

pub mod error;
pub(crate) mod group;
pub mod keys;
pub mod memory;
pub mod redis;

pub use error::StoreError;

use crate::config::{Settings, StoreChoice};

/// What `/readyz` reports about the store.
#[derive(Debug, Clone)]
pub struct ReadyInfo {
    pub backend: &'static str,
    pub redis_version: Option<String>,
    pub bloom_engine: &'static str,
    /// Cluster masters that do not serve now (the others still do).
    pub degraded: Vec<DownNode>,
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
            Store::Memory($s) => $call,
            Store::Redis($s) => $call,
        }
    };
    ($self:ident, $op:literal, $s:ident => $call:expr) => {{
        static DURATION: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
        // Boxed: a backend call's future is large (the Redis client's state, ~15 KB for a UV
        // add), and unboxed it sat inside every future around it — the handler's, the
        // router's — each moved whole into the next box (memmove was 4-8% of the gateway's CPU
        // in perf; issue 19).
        let call = Box::pin(async move {
            match $self {
                Store::Memory($s) => $call,
                Store::Redis($s) => $call,
            }
        });
        $crate::store::observed(&DURATION, $op, call).await
    }};
}

/// Times one store call as `gateway_store_call_duration_seconds{op}` and, when traces are
/// exported, wraps it in a `store` span named for the operation. `op` is a fixed name, so the
/// label set stays bounded.
pub(crate) async fn observed<T>(
    duration: &'static std::sync::OnceLock<metrics::Histogram>,
    op: &'static str,
    call: impl std::future::Future<Output = T>,
) -> T {
    use tracing::Instrument;
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
    out
}

impl Store {
    /// Builds the backend `settings` ask for. Redis being down is not an error here: the
    /// gateway starts, reports not ready, and serves once the client reconnects.
    pub async fn open(settings: &Settings) -> Result<Self, StoreError> {
        match &settings.store {
            StoreChoice::Memory => Ok(Self::Memory(memory::MemoryStore::new(settings))),
            StoreChoice::Redis(url) => Ok(Self::Redis(
                redis::RedisStore::connect(url, settings).await?,
            )),
        }
    }

    /// Gives the calling worker thread its own Redis connections (`workers.rs`); the memory
    /// store is one shared value and needs none.
    pub async fn attach_worker(
        &self,
        size: usize,
        wait: std::time::Duration,
    ) -> Result<(), StoreError> {
        match self {
            Self::Memory(_) => Ok(()),
            Self::Redis(s) => s.attach_worker(size, wait).await,
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

// Each domain's `impl <Domain>Store for Store`, dispatching with the macro above.
mod dispatch;
