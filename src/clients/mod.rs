//! API clients (docs/api.md "Clients and abuse"): the callers an operator registered in
//! `GATEWAY_CLIENTS_FILE`, each with its own id and, optionally, its own global-limiter budget.
//!
//! Only SHA-256 digests of keys are configured and kept: the file and the process never hold a
//! key in clear. A key that matches no client is refused (the HTTP layer answers 401), so an
//! invented key never buys a fresh budget. The registry is reloaded without a restart, on
//! `SIGHUP` or when the file changes; a file that does not parse leaves the clients as they were.

mod http;
mod settings;

pub use http::{BadKey, ClientKey, Domain, IdempotencyKey, IdentifyLayer, Namespace, ScopedName};
pub use settings::{Flags, Settings};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::{read_file, toml_error, Invalid};
use crate::types::{name_rule, Name};

/// One registered client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its name in logs, metrics and limiter keys (a [`Name`]).
    pub id: Name,
    /// Its own global-limiter budget; `None`: the global settings.
    pub limits: Option<Limits>,
}

/// Who sent a request, as the `identify` layer found it. Left in the request's extensions for
/// the limiter and handlers.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The configured client, or `None` for an anonymous caller (no `X-Api-Key`).
    pub client: Option<Arc<Client>>,
    /// `c:<client id>`, else `ip:<address or IPv6 /64>` ([`ClientKey`]): whom the global
    /// limiter charges, and the namespace of the caller's own resources.
    pub identity: String,
    /// Whether a clients file is configured: without one there is a single trusted back end,
    /// and one namespace for everyone (docs/clients.md "Who may do what").
    pub clients_configured: bool,
    /// With a clients file, whether anonymous callers may use the back-end routes
    /// (`GATEWAY_ANONYMOUS_BACKEND_ROUTES`).
    pub anonymous_backend_routes: bool,
}

impl Caller {
    /// The namespace of this caller's idempotency keys: none without a clients file (as the
    /// back-end routes), else its identity — the client, or the address of an anonymous
    /// caller — so another caller's reuse of the same key string is another key.
    pub fn idempotency_namespace(&self) -> &str {
        if self.clients_configured {
            &self.identity
        } else {
            ""
        }
    }
}

/// A GCRA budget: burst, and count per period (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub burst: u64,
    pub count: u64,
    pub period: u64,
}

/// The clients by key digest. Cheap to share; swapped whole on reload.
#[derive(Debug, Default)]
struct Table {
    by_digest: HashMap<[u8; 32], Arc<Client>>,
}

/// The file's shape: `[[client]]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    client: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    id: String,
    key_sha256: String,
    burst: Option<u64>,
    count: Option<u64>,
    period: Option<u64>,
}

/// Parses a clients file; every problem is named with the client it belongs to.
fn parse(text: &str, global: Limits) -> Result<Table, String> {
    let file: File = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    let mut table = Table::default();
    let mut ids = std::collections::HashSet::new();
    for (n, entry) in file.client.into_iter().enumerate() {
        let at = format!("client #{} ({:?})", n + 1, entry.id);
        let id = Name::try_from(entry.id.clone())
            .map_err(|_| format!(concat!("{}: id must be ", name_rule!()), at))?;
        if !ids.insert(entry.id.clone()) {
            return Err(format!("{at}: the id is used twice"));
        }
        let digest = parse_digest(&entry.key_sha256)
            .ok_or_else(|| format!("{at}: key_sha256 must be 64 hex digits"))?;
        let limits = match (entry.burst, entry.count, entry.period) {
            (None, None, None) => None,
            (burst, count, period) => {
                let limits = Limits {
                    burst: burst.unwrap_or(global.burst),
                    count: count.unwrap_or(global.count),
                    period: period.unwrap_or(global.period),
                };
                if limits.count == 0 || limits.period == 0 {
                    return Err(format!("{at}: count and period must be at least 1"));
                }
                if limits.burst > 1_000_000_000 || limits.count > 1_000_000_000 {
                    return Err(format!("{at}: burst and count are at most 10^9"));
                }
                if limits.period > 31_536_000 {
                    return Err(format!("{at}: period is at most 31536000 s"));
                }
                Some(limits)
            }
        };
        let client = Arc::new(Client { id, limits });
        if table.by_digest.insert(digest, client).is_some() {
            return Err(format!("{at}: key_sha256 is used by another client"));
        }
    }
    Ok(table)
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

/// The SHA-256 of `key` as lowercase hex: what a clients file lists for it.
pub fn key_digest_hex(key: &[u8]) -> String {
    crate::types::sha256_hex(key)
}

/// The registered clients, or none when `GATEWAY_CLIENTS_FILE` is unset.
#[derive(Debug)]
pub struct Clients {
    table: RwLock<Arc<Table>>,
    file: Option<PathBuf>,
    global: Limits,
}

impl Clients {
    /// No clients: every `X-Api-Key` is refused.
    pub fn none(global: Limits) -> Self {
        Self {
            table: RwLock::default(),
            file: None,
            global,
        }
    }

    /// Loads `file`; a file that cannot be read or parsed is a refusal to start.
    pub fn load(file: &Path, global: Limits) -> Result<Self, Invalid> {
        const VAR: &str = "GATEWAY_CLIENTS_FILE";
        let text = read_file(VAR, file, "TOML file of API clients")?;
        let table = String::from_utf8(text)
            .map_err(|_| "not UTF-8 text".to_owned())
            .and_then(|text| parse(&text, global))
            .map_err(|e| {
                Invalid::new(
                    VAR,
                    format!("{}: {e}", file.display()),
                    "write [[client]] tables with an id and key_sha256 (docs/api.md, \
                     \"API clients file\"), or leave it unset",
                )
            })?;
        tracing::info!(clients = table.by_digest.len(), file = %file.display(), "API clients loaded");
        Ok(Self {
            table: RwLock::new(Arc::new(table)),
            file: Some(file.to_owned()),
            global,
        })
    }

    /// Whether clients come from a file (`GATEWAY_CLIENTS_FILE`), even an empty one.
    pub fn configured(&self) -> bool {
        self.file.is_some()
    }

    /// The client whose key is `key`, if any.
    pub fn find(&self, key: &[u8]) -> Option<Arc<Client>> {
        let digest: [u8; 32] = Sha256::digest(key).into();
        self.current().by_digest.get(&digest).cloned()
    }

    /// The budget of `client`, or the global one for anonymous callers.
    pub fn limits(&self, client: Option<&Client>) -> Limits {
        client.and_then(|c| c.limits).unwrap_or(self.global)
    }

    fn current(&self) -> Arc<Table> {
        self.table
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads the file again; on any error the previous clients stay and the error is logged.
    pub fn reload(&self) {
        let Some(file) = &self.file else { return };
        match std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text, self.global))
        {
            Ok(table) => {
                tracing::info!(clients = table.by_digest.len(), file = %file.display(), "API clients reloaded");
                *self
                    .table
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(table);
            }
            Err(e) => {
                tracing::error!(error = %e, file = %file.display(), "API clients file refused; keeping the previous clients")
            }
        }
    }

    /// Reloads on `SIGHUP` and whenever the file's modification time or size changes (checked
    /// every two seconds). Polling rather than inotify: one `stat` every two seconds is
    /// nothing, and it also sees the file replaced by a config-map style symlink swap.
    pub fn watch(self: &Arc<Self>) {
        if let Some(file) = self.file.clone() {
            crate::reload::watch(
                vec![file],
                WATCH_EVERY,
                Arc::downgrade(self),
                |clients: &Self| {
                    clients.reload();
                },
            );
        }
    }
}

/// How often the clients file is checked for changes.
const WATCH_EVERY: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    const GLOBAL: Limits = Limits {
        burst: 100,
        count: 50,
        period: 1,
    };

    #[test]
    fn clients_are_found_by_key_digest_only() {
        let text = format!(
            "[[client]]\nid = \"web\"\nkey_sha256 = \"{}\"\nburst = 200\n\n[[client]]\nid = \"ios\"\nkey_sha256 = \"{}\"\n",
            key_digest_hex(b"web-key"),
            key_digest_hex(b"ios-key").to_uppercase(),
        );
        let table = parse(&text, GLOBAL).unwrap();
        let clients = Clients {
            table: RwLock::new(Arc::new(table)),
            file: None,
            global: GLOBAL,
        };
        let web = clients.find(b"web-key").unwrap();
        assert_eq!(web.id.as_str(), "web");
        assert_eq!(
            clients.limits(Some(&web)),
            Limits {
                burst: 200,
                count: 50,
                period: 1
            }
        );
        let ios = clients.find(b"ios-key").unwrap();
        assert_eq!(clients.limits(Some(&ios)), GLOBAL);
        assert!(clients.find(b"web-key ").is_none());
        assert!(clients
            .find(key_digest_hex(b"web-key").as_bytes())
            .is_none());
    }

    #[test]
    fn bad_files_are_refused_with_the_client_named() {
        let digest = key_digest_hex(b"k");
        for (text, want) in [
            ("[[client]]\nid = \"a b\"\nkey_sha256 = \"DIGEST\"".to_owned(), "id must be"),
            ("[[client]]\nid = \"a\"\nkey_sha256 = \"abc\"".to_owned(), "64 hex"),
            ("[[client]]\nid = \"a\"\nkey_sha256 = \"DIGEST\"\ncount = 0".to_owned(), "at least 1"),
            ("[[client]]\nid = \"a\"\nkey_sha256 = \"DIGEST\"\n[[client]]\nid = \"a\"\nkey_sha256 = \"DIGEST\"".to_owned(), "used twice"),
            ("[[client]]\nid = \"a\"\nkey_sha256 = \"DIGEST\"\n[[client]]\nid = \"b\"\nkey_sha256 = \"DIGEST\"".to_owned(), "another client"),
            ("[[client]]\nid = \"a\"\nkey = \"plain\"".to_owned(), "unknown field"),
        ] {
            let err = parse(&text.replace("DIGEST", &digest), GLOBAL).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
