//! The shared part of what the library runs on: the validated [`Common`] that
//! [`Flags::settings`] makes of the command line and environment (see `validate.rs`), and its
//! parts (the store, the global limiter, end-user JWTs).

use std::net::SocketAddr;
use std::time::Duration;

use ipnet::IpNet;

use super::FailPolicy;
#[cfg(doc)]
use super::Flags;

/// Which backend holds the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The embedded in-memory backend: state lives and dies with the process.
    Memory,
    /// Redis (standalone, TLS or Cluster) at this URL.
    Redis(String),
}

/// The global limiter's policy.
#[derive(Debug, Clone)]
pub struct GlobalLimit {
    pub enabled: bool,
    /// Decide but never refuse (`GATEWAY_GLOBAL_LIMIT=shadow`).
    pub shadow: bool,
    pub max_burst: u64,
    pub count_per_period: u64,
    pub period: u64,
    pub fail: FailPolicy,
}

/// How many replicas must hold a lasting write before it is acknowledged, and how long to wait
/// for them (`replicas == 0`: no wait).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteReplicas {
    pub replicas: u32,
    pub timeout: Duration,
}

/// Validated settings shared by the domains: a domain's own are in its folder, and `Settings`
/// holds both (reaching these through `Deref`).
#[derive(Debug, Clone)]
pub struct Common {
    pub listen: SocketAddr,
    pub store: StoreChoice,
    /// `None` means: generate one at start-up.
    pub admin_token: Option<String>,
    pub key_prefix: String,
    pub tz: chrono_tz::Tz,
    pub store_timeout: Duration,
    pub global: GlobalLimit,
    pub trusted_proxies: Vec<IpNet>,
    pub cors_origins: Vec<String>,
    pub body_limit: usize,
    pub max_batch: usize,
    pub request_timeout: Duration,
    pub connections: Guards,
    /// Event streams (docs/api.md "Events").
    pub events: EventStreams,
    /// `None`: plain HTTP (`GATEWAY_TLS_CERT_FILE` and `GATEWAY_TLS_KEY_FILE` unset). Read
    /// and loaded where the configuration is put together (`src/settings.rs`), by the server.
    pub tls_files: Option<TlsFiles>,
    pub access_log: bool,
    pub jwt: Option<JwtSettings>,
    pub redis_pool_size: usize,
    /// `GATEWAY_WRITE_REPLICAS` and its timeout (docs/operations.md "Durable writes").
    pub write_replicas: WriteReplicas,
    /// Serving threads of the binary (`GATEWAY_WORKERS`; see `workers.rs`).
    pub workers: usize,
    pub max_item_bytes: usize,
    /// The clock the memory backend and the HTTP layers read "now" from: the wall clock, but
    /// in tests (never a setting of the binary).
    pub clock: crate::clock::Clock,
}

/// How event streams are kept: the heartbeat, their longest life and how many one client holds.
#[derive(Debug, Clone, Copy)]
pub struct EventStreams {
    pub heartbeat: Duration,
    pub max_age: Duration,
    pub per_client: usize,
}

/// A secret setting, which never reaches a log line through `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl std::ops::Deref for Secret {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// How end-user JWTs are verified (docs/api.md "Clients and abuse").
#[derive(Clone)]
pub struct JwtSettings {
    pub key: JwtKey,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    /// Clock leeway for `exp` and `nbf`, seconds.
    pub leeway_s: u64,
}

/// The verification key of end-user JWTs.
#[derive(Clone)]
pub enum JwtKey {
    /// HS256 with this shared secret.
    Secret(String),
    /// RS256 or ES256 with this PEM public key (its type picks the algorithm).
    PublicKeyPem(Vec<u8>),
}

// By hand, so the secret never reaches a log line through `{:?}`.
impl std::fmt::Debug for JwtSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = match self.key {
            JwtKey::Secret(_) => "HS256 secret",
            JwtKey::PublicKeyPem(_) => "PEM public key",
        };
        f.debug_struct("JwtSettings")
            .field("key", &key)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway_s", &self.leeway_s)
            .finish()
    }
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKey(..)")
    }
}

/// The connection guards (docs/configuration.md), which the server keeps.
#[derive(Debug, Clone, Copy)]
pub struct Guards {
    /// A request's header must arrive whole within this.
    pub header_timeout: Duration,
    /// A kept-alive connection with no traffic either way for this long is closed.
    pub idle_timeout: Duration,
    /// A connection whose answers are not read for this long is closed.
    pub write_timeout: Duration,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Connections one peer address (IPv4 address, IPv6 /64) may hold; a further one is closed.
    pub max_per_address: usize,
}

/// The certificate chain and key files of `GATEWAY_TLS_CERT_FILE` and `GATEWAY_TLS_KEY_FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}
