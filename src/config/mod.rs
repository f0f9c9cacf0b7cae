//! Configuration shared by every domain: the settings that are not one domain's (where to
//! serve, the store, limits, connections, TLS, JWTs, logs, workers). Every setting is both an
//! environment variable and a flag (`--help` lists them with their defaults); each domain's own
//! are in its folder (`src/<domain>/settings.rs`), and `src/settings.rs` puts them all together
//! as the binary's command ([`Config`]) and validated [`Settings`].
//!
//! Here: the shared clap struct ([`Flags`], each setting's flag, variable, default, range and
//! meaning); `switches.rs`: the sub-commands and switches; `parse.rs`: the value parsers and
//! their ranges; `cli.rs`: reading the command, a refused value told in the one form of
//! `invalid.rs` ([`Invalid`]); `validate.rs`, `secrets.rs`, `urls.rs`: the checks of what
//! parsed; `files.rs`: reading the files settings name; `settings.rs`: the shared part of what
//! the library runs on ([`Common`]). The value parsers and checks are the domains' too.

mod cli;
mod domain;
mod files;
mod invalid;
pub(crate) mod parse;
mod secrets;
mod settings;
mod switches;
mod urls;
mod validate;

pub use cli::load;
pub use domain::{DomainFlags, NoFlags};
pub use files::{read_file, toml_error};
pub use invalid::{listen_refused, register_command, Invalid};
pub(crate) use secrets::{secret, SECRET_BYTES};
pub use settings::{
    Common, EventStreams, GlobalLimit, Guards, JwtKey, JwtSettings, Secret, StoreChoice, TlsFiles,
    WriteReplicas,
};
pub use switches::{Command, FailPolicy, LimitMode, LogFormat, OnOff};
pub(crate) use urls::database_url;

use std::net::SocketAddr;

/// The shared part of the command line and environment (pulled into [`Config`]).
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Address to serve on.
    #[arg(
        long,
        env = "GATEWAY_LISTEN",
        default_value = "127.0.0.1:8080",
        value_parser = parse::address
    )]
    pub listen: SocketAddr,

    /// Redis to use: redis://, rediss:// (TLS) or redis-cluster://host:port?node=host:port
    /// (rediss-cluster:// with TLS); any other scheme, or none, is refused.
    /// Unset: the embedded in-memory backend (state is per process).
    // Its value (which may carry a password) is never printed by --help.
    #[arg(long, env = "REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,

    /// Bearer token for admin routes. Unset: one is generated and logged once at start-up.
    #[arg(long, env = "GATEWAY_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Namespace put in front of every key the gateway writes.
    #[arg(long, env = "GATEWAY_KEY_PREFIX", default_value = "gw:")]
    pub key_prefix: String,

    /// IANA time zone that defines "today".
    #[arg(long, env = "GATEWAY_TZ", default_value = "UTC", value_parser = parse::zone)]
    pub tz: chrono_tz::Tz,

    /// Timeout of each store call in milliseconds; past it the request answers 503.
    #[arg(
        long,
        env = "GATEWAY_STORE_TIMEOUT_MS",
        default_value_t = 1000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub store_timeout_ms: u64,

    /// Global per-client rate limit on every request: on, off, or shadow (decide and send the
    /// headers, count would-be refusals, refuse nothing).
    #[arg(long, env = "GATEWAY_GLOBAL_LIMIT", default_value = "on")]
    pub global_limit: LimitMode,

    /// Global limiter: burst (GCRA max_burst).
    #[arg(
        long,
        env = "GATEWAY_GLOBAL_BURST",
        default_value_t = 100,
        value_parser = parse::at_least::<u64>(0)
    )]
    pub global_burst: u64,

    /// Global limiter: requests per period.
    #[arg(
        long,
        env = "GATEWAY_GLOBAL_COUNT",
        default_value_t = 50,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub global_count: u64,

    /// Global limiter: period in seconds.
    #[arg(
        long,
        env = "GATEWAY_GLOBAL_PERIOD",
        default_value_t = 1,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub global_period: u64,

    /// What the global limiter does when the store is down: open (serve) or closed (503).
    #[arg(long, env = "GATEWAY_GLOBAL_FAIL", default_value = "open")]
    pub global_fail: FailPolicy,

    /// Comma-separated CIDRs whose X-Forwarded-For header is believed.
    #[arg(
        long,
        env = "GATEWAY_TRUSTED_PROXIES",
        default_value = "",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,

    /// Comma-separated origins allowed to call from a browser, or `*`. Empty: no CORS headers.
    #[arg(
        long,
        env = "GATEWAY_CORS_ORIGINS",
        default_value = "",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,

    /// Largest request body in bytes.
    #[arg(
        long,
        env = "GATEWAY_BODY_LIMIT",
        default_value_t = 1024 * 1024,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub body_limit: usize,

    /// Largest number of items in one batch.
    #[arg(
        long,
        env = "GATEWAY_MAX_BATCH",
        default_value_t = 1000,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub max_batch: usize,

    /// Longest time one request may take, in milliseconds (then 503).
    #[arg(
        long,
        env = "GATEWAY_REQUEST_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub request_timeout_ms: u64,

    /// A request's header must arrive whole within this many milliseconds (slow clients).
    #[arg(
        long,
        env = "GATEWAY_HEADER_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub header_timeout_ms: u64,

    /// A kept-alive connection with no traffic for this many milliseconds is closed.
    #[arg(
        long,
        env = "GATEWAY_IDLE_TIMEOUT_MS",
        default_value_t = 60_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub idle_timeout_ms: u64,

    /// A connection whose answers are not read for this many milliseconds is closed (its
    /// unread pipelined requests are not run; HTTP/2 streams stuck on a zero window too).
    #[arg(
        long,
        env = "GATEWAY_WRITE_TIMEOUT_MS",
        default_value_t = 10_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub write_timeout_ms: u64,

    /// Connections served at once; more wait in the listen backlog.
    #[arg(
        long,
        env = "GATEWAY_MAX_CONNECTIONS",
        default_value_t = 10_000,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub max_connections: usize,

    /// Connections one peer address (an IPv4 address, an IPv6 /64) may hold at once; a further
    /// one is closed at once, so one address cannot take every slot.
    #[arg(
        long,
        env = "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 256,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub max_connections_per_address: usize,

    /// A comment line is sent on a quiet event stream this often (milliseconds), so proxies
    /// keep it open.
    #[arg(
        long,
        env = "GATEWAY_EVENTS_HEARTBEAT_MS",
        default_value_t = 15_000,
        value_parser = parse::at_least::<u64>(100)
    )]
    pub events_heartbeat_ms: u64,

    /// An event stream ends after this many seconds (the client reconnects and goes on).
    #[arg(
        long,
        env = "GATEWAY_EVENTS_MAX_AGE_S",
        default_value_t = 3_600,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub events_max_age_s: u64,

    /// Event streams one client (API client, else address) may hold open at once; one more
    /// is refused with 429.
    #[arg(
        long,
        env = "GATEWAY_MAX_STREAMS_PER_CLIENT",
        default_value_t = 16,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub max_streams_per_client: usize,

    /// PEM certificate chain to serve HTTPS with (ALPN h2 and http/1.1), reloaded when it
    /// changes. Set together with --tls-key-file; unset: plain HTTP/1.1 and h2c.
    #[arg(long, env = "GATEWAY_TLS_CERT_FILE")]
    pub tls_cert_file: Option<std::path::PathBuf>,

    /// PEM private key of --tls-cert-file (PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long, env = "GATEWAY_TLS_KEY_FILE")]
    pub tls_key_file: Option<std::path::PathBuf>,

    /// Verify end-user JWTs signed with this HS256 secret on user routes. Unset (and no key
    /// file): user ids are trusted as given.
    #[arg(long, env = "GATEWAY_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// Verify end-user JWTs (RS256 or ES256) with this PEM public key on user routes.
    #[arg(long, env = "GATEWAY_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<std::path::PathBuf>,

    /// Required `iss` of end-user JWTs.
    #[arg(long, env = "GATEWAY_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// Required `aud` of end-user JWTs.
    #[arg(long, env = "GATEWAY_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// Clock leeway for end-user JWTs' `exp` and `nbf`, in seconds.
    #[arg(
        long,
        env = "GATEWAY_JWT_LEEWAY_S",
        default_value_t = 30,
        value_parser = parse::at_least::<u64>(0)
    )]
    pub jwt_leeway_s: u64,

    /// Log lines as `text` or `json` (one object per line).
    #[arg(long, env = "GATEWAY_LOG_FORMAT", default_value = "text")]
    pub log_format: LogFormat,

    /// One INFO line per request (method, route, status, latency, request id, client, limiter
    /// outcome): on or off.
    #[arg(long, env = "GATEWAY_ACCESS_LOG", default_value = "on")]
    pub access_log: OnOff,

    /// Threads serving requests, each its own single-threaded runtime with its own Redis
    /// connections, all accepting on the one listener. Default: one per CPU core.
    // One runtime per core rather than Tokio's work-stealing pool: a request then never hops
    // threads between its socket, its handler and its Redis connection, and each connection
    // pipelines more commands per write (measured with bench/ab.py, UV add, 2 cores: +39%
    // req/s, -30% CPU per request).
    #[arg(long, env = "GATEWAY_WORKERS", value_parser = parse::at_least::<usize>(1))]
    pub workers: Option<usize>,

    /// Connections to Redis that serve requests (each auto-pipelines), split across the
    /// workers, at least one each.
    // 2, not more: fewer connections pipeline more commands per write (measured with
    // bench/ab.py: pool 2 served +14% rate-limit checks at lower p99 than pool 4 on 2 cores).
    #[arg(
        long,
        env = "GATEWAY_REDIS_POOL_SIZE",
        default_value_t = 2,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub redis_pool_size: usize,

    /// Replicas of its master that must hold a lasting write (a purchase, a restock, a lock
    /// acquired or renewed, a job enqueued or acked) before it is answered with success (Redis
    /// `WAIT`). 0: answered once the master has it.
    #[arg(
        long,
        env = "GATEWAY_WRITE_REPLICAS",
        default_value_t = 0,
        value_parser = parse::at_least::<u32>(0)
    )]
    pub write_replicas: u32,

    /// How long a lasting write waits for its replicas, in milliseconds; past it the answer is
    /// 503 backend_unavailable.
    #[arg(
        long,
        env = "GATEWAY_WRITE_REPLICAS_TIMEOUT_MS",
        default_value_t = 500,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub write_replicas_timeout_ms: u64,

    /// Longest text item (visitor, dedup item) in bytes.
    #[arg(
        long,
        env = "GATEWAY_MAX_ITEM_BYTES",
        default_value_t = 512,
        value_parser = parse::at_least::<usize>(1)
    )]
    pub max_item_bytes: usize,
}
