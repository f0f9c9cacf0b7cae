//! The checks of the parsed configuration beyond each value's range (which its parser keeps,
//! `parse.rs`): formats and combinations, each refusal an [`Invalid`] naming the one setting
//! it is about; and the making of [`Common`] from what passed.

use std::time::Duration;

use ipnet::IpNet;

use super::secrets::{secret, HS256_SECRET_BYTES, SECRET_BYTES};
use super::{
    read_file, urls, Common, EventStreams, Flags, GlobalLimit, Guards, Invalid, JwtKey,
    JwtSettings, LimitMode, OnOff, StoreChoice, TlsFiles, WriteReplicas,
};

impl Flags {
    /// Checks the parsed shared configuration and turns it into [`Common`].
    pub fn settings(&self) -> Result<Common, Invalid> {
        let store = self.store()?;
        if self.write_replicas > 0 && store == StoreChoice::Memory {
            return Err(Invalid::new(
                "GATEWAY_WRITE_REPLICAS",
                format!(
                    "is {}, and the embedded backend has no replicas",
                    self.write_replicas
                ),
                "set REDIS_URL, or write 0",
            ));
        }
        Ok(Common {
            listen: self.listen,
            store,
            admin_token: secret(
                "GATEWAY_ADMIN_TOKEN",
                self.admin_token.as_deref(),
                SECRET_BYTES,
                "for one generated at start-up",
            )?
            .map(|s| s.0),
            key_prefix: self.key_prefix()?,
            tz: self.tz,
            store_timeout: Duration::from_millis(self.store_timeout_ms),
            global: self.global(),
            trusted_proxies: self.trusted_proxies()?,
            cors_origins: urls::cors_origins(&self.cors_origins)?,
            body_limit: self.body_limit,
            max_batch: self.max_batch,
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            access_log: self.access_log == OnOff::On,
            jwt: self.jwt()?,
            connections: self.guards(),
            events: self.events(),
            tls_files: self.tls()?,
            redis_pool_size: self.redis_pool_size,
            write_replicas: WriteReplicas {
                replicas: self.write_replicas,
                timeout: Duration::from_millis(self.write_replicas_timeout_ms),
            },
            workers: self
                .workers
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
            max_item_bytes: self.max_item_bytes,
            clock: crate::clock::Clock::system(),
        })
    }

    fn store(&self) -> Result<StoreChoice, Invalid> {
        match self.redis_url.as_deref().map(str::trim) {
            None | Some("") => Ok(StoreChoice::Memory),
            Some(url) => urls::redis_url(url).map(|()| StoreChoice::Redis(url.to_owned())),
        }
    }

    /// Braces would make every key one Cluster hash tag, whitespace and control characters
    /// break `redis-cli` and log lines, and a long prefix is paid on every key.
    fn key_prefix(&self) -> Result<String, Invalid> {
        let prefix = &self.key_prefix;
        let why = if prefix.chars().count() > 64 {
            "is longer than 64 characters"
        } else if prefix.contains(['{', '}']) {
            "holds a brace"
        } else if prefix.chars().any(|c| c.is_whitespace() || c.is_control()) {
            "holds a space or a control character"
        } else {
            return Ok(prefix.clone());
        };
        Err(Invalid::new(
            "GATEWAY_KEY_PREFIX",
            format!("{prefix:?} {why}"),
            "write at most 64 characters without braces or spaces, e.g. gw: (the default)",
        ))
    }

    fn trusted_proxies(&self) -> Result<Vec<IpNet>, Invalid> {
        self.trusted_proxies
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        Invalid::new(
                            "GATEWAY_TRUSTED_PROXIES",
                            format!("{s:?} is not a CIDR or an IP address"),
                            "write CIDRs or addresses separated by commas, e.g. \
                             10.0.0.0/8,192.168.1.10",
                        )
                    })
            })
            .collect()
    }

    fn global(&self) -> GlobalLimit {
        GlobalLimit {
            enabled: self.global_limit != LimitMode::Off,
            shadow: self.global_limit == LimitMode::Shadow,
            max_burst: self.global_burst,
            count_per_period: self.global_count,
            period: self.global_period,
            fail: self.global_fail,
        }
    }

    fn events(&self) -> EventStreams {
        EventStreams {
            heartbeat: Duration::from_millis(self.events_heartbeat_ms),
            max_age: Duration::from_secs(self.events_max_age_s),
            per_client: self.max_streams_per_client,
        }
    }

    fn guards(&self) -> Guards {
        Guards {
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            write_timeout: Duration::from_millis(self.write_timeout_ms),
            max_connections: self.max_connections,
            max_per_address: self.max_connections_per_address,
        }
    }

    /// Both TLS files or neither (the server reads them, before the store is opened).
    fn tls(&self) -> Result<Option<TlsFiles>, Invalid> {
        let alone = |var: &str, other: &str| {
            Invalid::new(
                var,
                format!("is set without {other}"),
                format!("set {other} too (both, or neither)"),
            )
        };
        match (&self.tls_cert_file, &self.tls_key_file) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            })),
            (Some(_), None) => Err(alone("GATEWAY_TLS_CERT_FILE", "GATEWAY_TLS_KEY_FILE")),
            (None, Some(_)) => Err(alone("GATEWAY_TLS_KEY_FILE", "GATEWAY_TLS_CERT_FILE")),
        }
    }

    fn jwt(&self) -> Result<Option<JwtSettings>, Invalid> {
        let secret = secret(
            "GATEWAY_JWT_SECRET",
            self.jwt_secret.as_deref(),
            HS256_SECRET_BYTES,
            "to trust user ids as given",
        )?;
        let key = match (secret, &self.jwt_public_key_file) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(Invalid::new(
                    "GATEWAY_JWT_PUBLIC_KEY_FILE",
                    "is set together with GATEWAY_JWT_SECRET",
                    "set one of the two: the PEM public key (RS256, ES256) or the HS256 secret",
                ))
            }
            (Some(secret), None) => JwtKey::Secret(secret.0),
            (None, Some(file)) => JwtKey::PublicKeyPem(read_file(
                "GATEWAY_JWT_PUBLIC_KEY_FILE",
                file,
                "PEM public key (RSA, or EC P-256)",
            )?),
        };
        Ok(Some(JwtSettings {
            key,
            issuer: self.jwt_issuer.clone(),
            audience: self.jwt_audience.clone(),
            leeway_s: self.jwt_leeway_s,
        }))
    }
}
