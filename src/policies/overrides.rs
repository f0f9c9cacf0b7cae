//! Runtime overrides and denies (docs/policies.md "Overrides and denies"): per policy (the
//! global layer's included) and per identity, another budget or a deny, kept in the store so
//! every instance applies them, with an optional expiry. Each instance keeps the whole set in
//! memory and polls the store's version of it every [`POLL_EVERY`]; a request looks its
//! identities up here, never in the store.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::budget::OverrideStore;
use super::By;
use crate::clock::Clock;
use crate::gcra::Gcra;
use crate::types::{Name, UserId};

/// Most overrides the store keeps (expired ones are dropped to make room): every instance holds
/// them all, and a full read is one call that stays well inside the 5 ms rule.
pub const MAX_OVERRIDES: u64 = 4_096;

/// How often an instance asks the store whether the overrides changed: a change is applied
/// everywhere within this (plus one round trip).
pub const POLL_EVERY: Duration = Duration::from_millis(250);

/// One override as stored (the JSON after the expiry) and as the admin routes show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// As the operator wrote it in the path.
    pub identity: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<u64>,
    #[serde(default)]
    pub deny: bool,
}

/// An override in force.
#[derive(Debug, Clone)]
pub struct Override {
    pub policy: String,
    pub stored: Stored,
    /// Unix ms; `None`: until deleted.
    pub expires_at_ms: Option<i64>,
    /// The budget it sets (none for a deny).
    pub gcra: Option<Gcra>,
    /// `RateLimit-Policy`'s item under it.
    pub header_item: String,
}

/// The store's field of an override: the policy and the identity's key, apart by a newline
/// (neither can hold one).
pub fn field(policy: &str, key: &str) -> String {
    format!("{policy}\n{key}")
}

/// The store's value: `<expires_at ms or 0>|<json>`.
pub fn value(stored: &Stored, expires_at_ms: Option<i64>) -> String {
    let json = serde_json::to_string(stored).unwrap_or_default();
    format!("{}|{json}", expires_at_ms.unwrap_or(0))
}

fn parse_entry(field: &str, value: &str) -> Option<(String, String, Override)> {
    let (policy, key) = field.split_once('\n')?;
    let (at, json) = value.split_once('|')?;
    let at: i64 = at.parse().ok()?;
    let stored: Stored = serde_json::from_str(json).ok()?;
    let gcra = match (stored.burst, stored.count, stored.period) {
        (Some(b), Some(c), Some(p)) if !stored.deny => Some(Gcra::new(b, c, p)),
        _ => None,
    };
    let header_item = gcra.map_or_else(String::new, |g| {
        format!("\"{policy}\";q={};w={}", g.limit, g.window_secs())
    });
    Some((
        policy.to_owned(),
        key.to_owned(),
        Override {
            policy: policy.to_owned(),
            stored,
            expires_at_ms: (at > 0).then_some(at),
            gcra,
            header_item,
        },
    ))
}

/// The key a policy counting `by` (or the global layer, `by = None`) keeps `identity` under,
/// as the limiter spells it (`c:web`, `ip:203.0.113.7`, `u:42`, `h:<sha256>`, `op:<policy>`);
/// `Err` says why `identity` cannot be one of what it counts.
pub fn identity_key(policy: &str, by: Option<&By>, identity: &str) -> Result<String, String> {
    let address = |text: &str| -> Option<String> {
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Some(match ip.to_canonical() {
                IpAddr::V4(v4) => format!("ip:{v4}"),
                v6 => format!("ip:{}", IpNet::new(v6, 64).ok()?.trunc()),
            });
        }
        let net = text.parse::<IpNet>().ok()?;
        match net {
            IpNet::V6(v6) if v6.prefix_len() == 64 => Some(format!("ip:{}", net.trunc())),
            _ => None,
        }
    };
    match by {
        None | Some(By::Client) => address(identity)
            .or_else(|| Name::try_from(identity.to_owned()).ok().map(|n| format!("c:{n}")))
            .ok_or_else(|| {
                format!("{policy} counts clients: the identity is a client id or an address (an IPv6 /64), not {identity:?}")
            }),
        Some(By::Address) => address(identity).ok_or_else(|| {
            format!("{policy} counts addresses: the identity is an IPv4 address or an IPv6 /64, not {identity:?}")
        }),
        Some(By::User) => UserId::parse(identity)
            .map(|u| format!("u:{}", u.0))
            .map_err(|_| format!("{policy} counts users: the identity is a user id (0..=4294967295), not {identity:?}")),
        Some(By::Header(name)) => {
            if identity.is_empty() || identity.len() > 1024 {
                return Err(format!("{policy} counts {name} values: 1 to 1024 bytes"));
            }
            Ok(format!("h:{}", crate::types::sha256_hex(identity.as_bytes())))
        }
        Some(By::Operation) => match identity {
            "*" => Ok(format!("op:{policy}")),
            _ => Err(format!("{policy} counts the operation as a whole: its one identity is \"*\"")),
        },
    }
}

/// The overrides in force, by policy and identity key.
#[derive(Debug, Default)]
pub struct Table {
    version: u64,
    by_policy: HashMap<String, HashMap<String, Arc<Override>>>,
}

/// Every instance's copy of the store's overrides.
#[derive(Debug)]
pub struct Overrides {
    table: RwLock<Arc<Table>>,
    clock: Clock,
}

impl Overrides {
    pub fn new(clock: Clock) -> Self {
        Self {
            table: RwLock::default(),
            clock,
        }
    }

    fn current(&self) -> Arc<Table> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether none is in force: the limiter then looks nothing up.
    pub fn is_empty(&self) -> bool {
        self.current().by_policy.is_empty()
    }

    /// The override of `policy` for the identity `key`, unless it has expired.
    pub fn find(&self, policy: &str, key: &str) -> Option<Arc<Override>> {
        let table = self.current();
        let found = table.by_policy.get(policy)?.get(key)?.clone();
        match found.expires_at_ms {
            Some(at) if at <= self.clock.now_ms() => None,
            _ => Some(found),
        }
    }

    /// The overrides of `policy` in force.
    pub fn of(&self, policy: &str) -> Vec<Arc<Override>> {
        let now = self.clock.now_ms();
        let table = self.current();
        let mut list: Vec<_> = table
            .by_policy
            .get(policy)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        list.retain(|o| o.expires_at_ms.is_none_or(|at| at > now));
        list.sort_by(|a, b| a.stored.identity.cmp(&b.stored.identity));
        list
    }

    /// Reads the store's set again when its version moved.
    pub(crate) async fn refresh(&self, store: &impl OverrideStore) {
        let known = self.current().version;
        match store.overrides_version().await {
            Ok(version) if version == known => return,
            Ok(_) => {}
            Err(_) => return,
        }
        let Ok((version, entries)) = store.overrides_all().await else {
            return;
        };
        let mut table = Table {
            version,
            by_policy: HashMap::new(),
        };
        for (field, value) in entries {
            if let Some((policy, key, found)) = parse_entry(&field, &value) {
                table
                    .by_policy
                    .entry(policy)
                    .or_default()
                    .insert(key, Arc::new(found));
            }
        }
        *self.table.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(table);
    }

    /// Polls the store every [`POLL_EVERY`] for as long as `self` lives: the caller spawns it
    /// where the store's type is concrete (its futures are `Send` there).
    pub(crate) fn watching<S: OverrideStore>(
        self: &Arc<Self>,
        store: S,
    ) -> impl Future<Output = ()> {
        let weak = Arc::downgrade(self);
        async move {
            loop {
                let Some(overrides) = weak.upgrade() else {
                    return;
                };
                overrides.refresh(&store).await;
                drop(overrides);
                tokio::time::sleep(POLL_EVERY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_checked_against_what_the_policy_counts() {
        let key = |by: Option<&By>, id: &str| identity_key("p", by, id);
        assert_eq!(key(None, "web").unwrap(), "c:web");
        assert_eq!(key(None, "203.0.113.7").unwrap(), "ip:203.0.113.7");
        assert_eq!(
            key(Some(&By::Address), "2001:db8:1:2::/64").unwrap(),
            "ip:2001:db8:1:2::/64"
        );
        assert_eq!(
            key(Some(&By::Address), "2001:db8:1:2::9").unwrap(),
            "ip:2001:db8:1:2::/64"
        );
        assert!(key(Some(&By::Address), "web").is_err());
        assert!(key(Some(&By::Address), "2001:db8::/48").is_err());
        assert_eq!(key(Some(&By::User), "42").unwrap(), "u:42");
        assert!(key(Some(&By::User), "x").is_err());
        let header = By::Header("x-tenant".to_owned());
        assert_eq!(key(Some(&header), "acme").unwrap().len(), 66);
        assert_eq!(key(Some(&By::Operation), "*").unwrap(), "op:p");
        assert!(key(Some(&By::Operation), "x").is_err());
    }

    #[test]
    fn entries_round_trip_through_the_store_format() {
        let stored = Stored {
            identity: "42".to_owned(),
            burst: Some(4),
            count: Some(1),
            period: Some(60),
            deny: false,
        };
        let (policy, key, found) =
            parse_entry(&field("buy", "u:42"), &value(&stored, Some(5))).unwrap();
        assert_eq!((policy.as_str(), key.as_str()), ("buy", "u:42"));
        assert_eq!(found.stored, stored);
        assert_eq!(found.expires_at_ms, Some(5));
        assert_eq!(found.header_item, "\"buy\";q=5;w=300");
        let deny = Stored {
            deny: true,
            burst: None,
            count: None,
            period: None,
            ..stored
        };
        let (_, _, found) = parse_entry(&field("global", "c:web"), &value(&deny, None)).unwrap();
        assert!(found.gcra.is_none() && found.stored.deny && found.expires_at_ms.is_none());
    }
}
