//! The checks of the parsed configuration: ranges, formats and combinations, each refusal
//! naming the setting it is about, and the making of [`Settings`] from what passed.

use std::time::Duration;

use ipnet::IpNet;

use super::{
    Config, GlobalLimit, JwtKey, JwtSettings, LimitMode, OnOff, Secret, Settings, StoreChoice,
    WriteReplicas,
};

impl Config {
    /// Checks the parsed configuration and turns it into [`Settings`].
    pub fn settings(&self) -> Result<Settings, String> {
        let store = match self.redis_url.as_deref().map(str::trim) {
            None | Some("") => StoreChoice::Memory,
            Some(url) => StoreChoice::Redis(redis_url(url)?.to_owned()),
        };
        if self.key_prefix.len() > 64
            || self
                .key_prefix
                .chars()
                .any(|c| c == '{' || c == '}' || c.is_whitespace() || c.is_control())
        {
            return Err(
                "GATEWAY_KEY_PREFIX: at most 64 characters, no braces or spaces".to_owned(),
            );
        }
        let trusted_proxies = self
            .trusted_proxies
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("GATEWAY_TRUSTED_PROXIES: {s:?} is not a CIDR"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cors_origins = self
            .cors_origins
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        // One check per setting, each refusal naming only the setting it is about: a message
        // that lists three settings sends the reader looking for the one that is wrong.
        for (name, value) in [
            ("GATEWAY_GLOBAL_COUNT", self.global_count),
            ("GATEWAY_GLOBAL_PERIOD", self.global_period),
            ("GATEWAY_HEADER_TIMEOUT_MS", self.header_timeout_ms),
            ("GATEWAY_IDLE_TIMEOUT_MS", self.idle_timeout_ms),
            ("GATEWAY_WRITE_TIMEOUT_MS", self.write_timeout_ms),
            ("GATEWAY_MAX_CONNECTIONS", self.max_connections as u64),
            (
                "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS",
                self.max_connections_per_address as u64,
            ),
            ("GATEWAY_STORE_TIMEOUT_MS", self.store_timeout_ms),
            ("GATEWAY_REQUEST_TIMEOUT_MS", self.request_timeout_ms),
            ("GATEWAY_MAX_BATCH", self.max_batch as u64),
            ("GATEWAY_BODY_LIMIT", self.body_limit as u64),
            ("GATEWAY_REDIS_POOL_SIZE", self.redis_pool_size as u64),
            ("GATEWAY_UV_RETENTION_DAYS", self.uv_retention_days.into()),
            (
                "GATEWAY_DEDUP_RETENTION_DAYS",
                self.dedup_retention_days.into(),
            ),
            ("GATEWAY_GEO_RETENTION_DAYS", self.geo_retention_days.into()),
            ("GATEWAY_DEDUP_CAPACITY", self.dedup_capacity),
            ("GATEWAY_SECKILL_MAX_ORDERS", self.seckill_max_orders),
            ("GATEWAY_MAX_ITEM_BYTES", self.max_item_bytes as u64),
            ("GATEWAY_RATELIMIT_MAX_TTL_S", self.ratelimit_max_ttl_s),
            ("GATEWAY_QUEUE_MAX_JOBS", self.queue_max_jobs),
            (
                "GATEWAY_WRITE_REPLICAS_TIMEOUT_MS",
                self.write_replicas_timeout_ms,
            ),
        ] {
            if value == 0 {
                return Err(format!("{name}=0: must be at least 1"));
            }
        }
        if self.write_replicas > 0 && store == StoreChoice::Memory {
            return Err(format!(
                "GATEWAY_WRITE_REPLICAS={}: the embedded backend has no replicas; set REDIS_URL \
                 or leave it at 0",
                self.write_replicas
            ));
        }
        if self.checkin_retention_days == 0 || self.checkin_retention_days > 3660 {
            return Err(format!(
                "GATEWAY_CHECKIN_RETENTION_DAYS={}: must be within 1..=3660",
                self.checkin_retention_days
            ));
        }
        if !(self.dedup_error_rate > 0.0 && self.dedup_error_rate < 1.0) {
            return Err(format!(
                "GATEWAY_DEDUP_ERROR_RATE={}: must be above 0 and below 1",
                self.dedup_error_rate
            ));
        }
        Ok(Settings {
            listen: self.listen,
            store,
            admin_token: self.admin_token.clone().filter(|t| !t.is_empty()),
            key_prefix: self.key_prefix.clone(),
            tz: self.tz,
            store_timeout: Duration::from_millis(self.store_timeout_ms),
            global: GlobalLimit {
                enabled: self.global_limit != LimitMode::Off,
                shadow: self.global_limit == LimitMode::Shadow,
                max_burst: self.global_burst,
                count_per_period: self.global_count,
                period: self.global_period,
                fail: self.global_fail,
            },
            trusted_proxies,
            cors_origins,
            body_limit: self.body_limit,
            max_batch: self.max_batch,
            checkin_retention_days: self.checkin_retention_days,
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            access_log: self.access_log == OnOff::On,
            clients_file: self.clients_file.clone(),
            policies_file: self.policies_file.clone(),
            anonymous_backend_routes: self.anonymous_backend_routes == OnOff::On,
            ratelimit_max_ttl_s: self.ratelimit_max_ttl_s,
            jwt: self.jwt()?,
            connections: crate::serve::Guards {
                header_timeout: Duration::from_millis(self.header_timeout_ms),
                idle_timeout: Duration::from_millis(self.idle_timeout_ms),
                write_timeout: Duration::from_millis(self.write_timeout_ms),
                max_connections: self.max_connections,
                max_per_address: self.max_connections_per_address,
            },
            tls: self.tls()?,
            redis_pool_size: self.redis_pool_size,
            write_replicas: WriteReplicas {
                replicas: self.write_replicas,
                timeout: Duration::from_millis(self.write_replicas_timeout_ms),
            },
            workers: match self.workers {
                Some(0) => return Err("GATEWAY_WORKERS=0: must be at least 1".to_owned()),
                Some(n) => n,
                None => std::thread::available_parallelism().map_or(1, usize::from),
            },
            uv_retention_days: self.uv_retention_days,
            uv_visitor_key: self.uv_visitor_key()?,
            geo_max_places: self.geo_max_places.max(1),
            geo_retention_days: self.geo_retention_days,
            seckill_max_orders: self.seckill_max_orders,
            dedup_capacity: self.dedup_capacity,
            dedup_error_rate: self.dedup_error_rate,
            dedup_retention_days: self.dedup_retention_days,
            max_item_bytes: self.max_item_bytes,
            queue_max_jobs: self.queue_max_jobs,
            database_url: self
                .database_url
                .as_deref()
                .map(str::trim)
                .filter(|u| !u.is_empty())
                .map(str::to_owned),
            ledger_claim_idle: Duration::from_millis(self.ledger_claim_idle_ms.max(1)),
            clock: crate::clock::Clock::system(),
        })
    }
}

/// The schemes of a `REDIS_URL`: what fred reads as standalone Redis or Cluster, each
/// plain or TLS, and that the gateway's routing serves (`src/store/redis/`).
const REDIS_SCHEMES: [&str; 4] = ["redis", "rediss", "redis-cluster", "rediss-cluster"];

/// `url` when its scheme is one of [`REDIS_SCHEMES`]. Checked here because fred reads any
/// scheme it does not know as standalone Redis (`http://host:6379` connected) and a URL
/// without one as a host-less URL ("Invalid or missing host"), neither of which says what to
/// write instead. The refusal never repeats the URL: it may carry a password.
fn redis_url(url: &str) -> Result<&str, String> {
    let accepted = "redis://host:port[/db], rediss:// (TLS), redis-cluster://host:port or \
                    rediss-cluster:// (Cluster, TLS)";
    match url.split_once("://") {
        Some((scheme, _)) if REDIS_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) => {
            Ok(url)
        }
        Some((scheme, _)) if scheme.len() <= 32 && !scheme.contains('@') => Err(format!(
            "REDIS_URL: unsupported scheme {scheme}://; write {accepted}"
        )),
        _ => Err(format!(
            "REDIS_URL has no scheme (such as redis://localhost:6379); write {accepted}"
        )),
    }
}

impl Config {
    /// Both TLS files or neither; both are read now, so a bad pair stops the start.
    fn tls(&self) -> Result<Option<crate::serve::Tls>, String> {
        match (&self.tls_cert_file, &self.tls_key_file) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => crate::serve::Tls::load(cert.clone(), key.clone()).map(Some),
            (Some(_), None) => Err(
                "GATEWAY_TLS_CERT_FILE is set without GATEWAY_TLS_KEY_FILE: set both, or neither"
                    .to_owned(),
            ),
            (None, Some(_)) => Err(
                "GATEWAY_TLS_KEY_FILE is set without GATEWAY_TLS_CERT_FILE: set both, or neither"
                    .to_owned(),
            ),
        }
    }

    /// A secret short enough to guess would let a client find ids that steer a page's
    /// HyperLogLog again; 16 bytes, as for other keys of 128 bits.
    fn uv_visitor_key(&self) -> Result<Option<Secret>, String> {
        match self.uv_visitor_key.as_deref() {
            None | Some("") => Ok(None),
            Some(secret) if secret.len() < 16 => Err(format!(
                "GATEWAY_UV_VISITOR_KEY: at least 16 bytes, got {}; write a random secret, \
                 e.g. the output of `openssl rand -hex 16`, or leave it unset for one kept in \
                 the store",
                secret.len()
            )),
            Some(secret) => Ok(Some(Secret(secret.to_owned()))),
        }
    }

    fn jwt(&self) -> Result<Option<JwtSettings>, String> {
        let key = match (&self.jwt_secret, &self.jwt_public_key_file) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(
                    "set GATEWAY_JWT_SECRET or GATEWAY_JWT_PUBLIC_KEY_FILE, not both".to_owned(),
                )
            }
            (Some(secret), None) if secret.len() < 32 => {
                return Err("GATEWAY_JWT_SECRET: at least 32 bytes".to_owned())
            }
            (Some(secret), None) => JwtKey::Secret(secret.clone()),
            (None, Some(file)) => JwtKey::PublicKeyPem(
                std::fs::read(file)
                    .map_err(|e| format!("GATEWAY_JWT_PUBLIC_KEY_FILE {}: {e}", file.display()))?,
            ),
        };
        Ok(Some(JwtSettings {
            key,
            issuer: self.jwt_issuer.clone(),
            audience: self.jwt_audience.clone(),
            leeway_s: self.jwt_leeway_s,
        }))
    }
}
