//! Limit policies (docs/policies.md): named GCRA limits an operator stacks on the global
//! limiter, each applying to some operations and counting per some identity (the client, the
//! address, the user, a header's value, or the operation as a whole), read from
//! `GATEWAY_POLICIES_FILE` and reloaded without a restart like the clients file.
//!
//! This module owns the file (its parsing and every check that names the bad rule), the table
//! the limiter looks a request's route up in, and the reload. The limiter
//! (`http/limiter/`) finds the identities and charges the buckets; the store decides every
//! bucket of one request together ([`budget`]).

pub mod budget;
mod http;
mod memory;
pub mod overrides;
mod redis;
mod settings;

pub use http::{global_limit, Domain, GlobalRateLimitLayer, PoliciesState, PolicyRule};
pub use settings::{Flags, Settings};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde::Deserialize;

use crate::clock::Clock;
use crate::config::{read_file, toml_error, Invalid};
use crate::gcra::Gcra;
use crate::types::{name_rule, Name};

/// The global layer's own name in headers, problem documents and metrics: no policy may take it.
pub const GLOBAL: &str = "global";

/// Most policies in one file: each applying policy is one more key in a request's store call.
pub const MAX_POLICIES: usize = 64;

/// What a policy counts a request by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    /// The global layer's identity: the API client, else the address.
    Client,
    /// The peer address (IPv6: its /64), even for API clients.
    Address,
    /// The user the request acts for: the JWT `sub`, else the `user_id` in the path or body.
    User,
    /// The value of this header (its name lower-cased, as HTTP/2 carries it).
    Header(String),
    /// One bucket for every caller.
    Operation,
}

/// `name` lower-cased when it is a header field name (RFC 9110 §5.1: a token). Checked here
/// rather than with the HTTP crate's `HeaderName` so the policies stay free of the HTTP layer
/// (docs/design.md "Shape"); the limiter looks the header up by this name.
fn header_name(name: &str) -> Option<String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    (!name.is_empty() && name.bytes().all(token)).then(|| name.to_ascii_lowercase())
}

impl By {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "client" => Self::Client,
            "address" => Self::Address,
            "user" => Self::User,
            "operation" => Self::Operation,
            other => {
                let name = other.strip_prefix("header:")?;
                Self::Header(header_name(name)?)
            }
        })
    }

    /// As the file spells it.
    pub fn text(&self) -> String {
        match self {
            Self::Client => "client".to_owned(),
            Self::Address => "address".to_owned(),
            Self::User => "user".to_owned(),
            Self::Header(name) => format!("header:{name}"),
            Self::Operation => "operation".to_owned(),
        }
    }
}

/// One rule of the file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub name: Name,
    /// The operationIds it covers; `["*"]`: every operation.
    pub operations: Vec<String>,
    pub by: By,
    pub burst: u64,
    pub count: u64,
    pub period: u64,
    pub gcra: Gcra,
    /// Decides and counts, refuses nothing.
    pub shadow: bool,
    /// `RateLimit-Policy`'s item for it: `"<name>";q=<limit>;w=<seconds>`.
    pub header_item: String,
}

/// Where an operation is served: its method and route template (as axum's `MatchedPath`).
pub type Route = (String, String);

/// Every operation of the OpenAPI document by operationId, which the file names.
pub type Operations = HashMap<String, Route>;

/// A method of a route and the policies covering it.
type Covering = (String, Vec<Arc<Policy>>);

/// The policies in force, looked up by route. Swapped whole on reload.
#[derive(Debug, Default)]
pub struct Table {
    pub policies: Vec<Arc<Policy>>,
    /// Route template → (method, the policies covering it, `*` ones included).
    by_route: HashMap<String, Vec<Covering>>,
    /// The policies covering every operation (`["*"]`), for routes the document does not list.
    everywhere: Vec<Arc<Policy>>,
}

impl Table {
    /// The policies that apply to `method` `route` (empty for most requests).
    pub fn applying(&self, method: &str, route: &str) -> &[Arc<Policy>] {
        if self.policies.is_empty() {
            return &[];
        }
        self.by_route
            .get(route)
            .and_then(|methods| methods.iter().find(|(m, _)| m == method))
            .map_or(&self.everywhere[..], |(_, p)| &p[..])
    }

    /// The policies that can apply to `operation_id`.
    pub fn for_operation(&self, operation_id: &str) -> Vec<&str> {
        self.policies
            .iter()
            .filter(|p| p.operations.iter().any(|o| o == "*" || o == operation_id))
            .map(|p| p.name.as_str())
            .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    policy: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    operations: Vec<String>,
    by: String,
    burst: u64,
    count: u64,
    period: u64,
    #[serde(default)]
    mode: Option<String>,
}

/// The bounds every rule keeps: those of `POST /v1/ratelimit/check` (docs/api.md), and the
/// longest a bucket's key may live (`GATEWAY_RATELIMIT_MAX_TTL_S`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub max_ttl_s: u64,
}

/// Parses a policies file against the document's `operations`; every problem names its rule.
pub fn parse(text: &str, operations: &Operations, bounds: Bounds) -> Result<Table, String> {
    let file: File = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    if file.policy.len() > MAX_POLICIES {
        return Err(format!("at most {MAX_POLICIES} policies"));
    }
    let mut names = HashSet::new();
    let mut policies = Vec::with_capacity(file.policy.len());
    for (n, entry) in file.policy.into_iter().enumerate() {
        let at = format!("policy #{} ({:?})", n + 1, entry.name);
        policies.push(Arc::new(check(entry, &at, operations, bounds)?));
        if !names.insert(policies[n].name.clone()) {
            return Err(format!("{at}: the name is used twice"));
        }
    }
    let mut table = Table {
        everywhere: policies
            .iter()
            .filter(|p| p.operations.iter().any(|o| o == "*"))
            .cloned()
            .collect(),
        ..Table::default()
    };
    for (id, (method, route)) in operations {
        let covering: Vec<_> = policies
            .iter()
            .filter(|p| p.operations.iter().any(|o| o == "*" || o == id))
            .cloned()
            .collect();
        if !covering.is_empty() {
            table
                .by_route
                .entry(route.clone())
                .or_default()
                .push((method.clone(), covering));
        }
    }
    table.policies = policies;
    Ok(table)
}

fn check(
    entry: Entry,
    at: &str,
    operations: &Operations,
    bounds: Bounds,
) -> Result<Policy, String> {
    let name = Name::try_from(entry.name.clone())
        .map_err(|_| format!(concat!("{}: name must be ", name_rule!()), at))?;
    if entry.name == GLOBAL {
        return Err(format!(
            "{at}: \"{GLOBAL}\" is the global layer's own name; choose another"
        ));
    }
    if entry.operations.is_empty() {
        return Err(format!(
            "{at}: operations is empty (list operationIds, or \"*\")"
        ));
    }
    for op in &entry.operations {
        if op != "*" && !operations.contains_key(op) {
            return Err(format!(
                "{at}: no operation {op:?} in the OpenAPI document (operations are operationIds, like \"seckillBuy\", or \"*\")"
            ));
        }
    }
    let by = By::parse(&entry.by).ok_or_else(|| {
        format!(
            "{at}: by must be client, address, user, operation or header:<Name>, not {:?}",
            entry.by
        )
    })?;
    let gcra =
        budget(entry.burst, entry.count, entry.period, bounds).map_err(|e| format!("{at}: {e}"))?;
    let shadow = match entry.mode.as_deref() {
        None | Some("enforce") => false,
        Some("shadow") => true,
        Some(other) => {
            return Err(format!(
                "{at}: mode must be enforce or shadow, not {other:?}"
            ))
        }
    };
    let header_item = format!("\"{}\";q={};w={}", name, gcra.limit, gcra.window_secs());
    Ok(Policy {
        name,
        operations: entry.operations,
        by,
        burst: entry.burst,
        count: entry.count,
        period: entry.period,
        gcra,
        shadow,
        header_item,
    })
}

/// The GCRA of `burst`, `count` per `period`, within the bounds of a rate-limit check
/// (docs/api.md "Rate-limit checks") and `GATEWAY_RATELIMIT_MAX_TTL_S`; `Err` says which is off.
pub fn budget(burst: u64, count: u64, period: u64, bounds: Bounds) -> Result<Gcra, String> {
    if burst > 1_000_000 {
        return Err("burst is at most 1000000".to_owned());
    }
    if count == 0 || count > 1_000_000 {
        return Err("count must be 1 to 1000000".to_owned());
    }
    if period == 0 || period > 31_536_000 {
        return Err("period must be 1 to 31536000 s".to_owned());
    }
    let gcra = Gcra::new(burst, count, period);
    // The key of a full bucket lives as long as the whole tolerance (docs/ratelimit.md).
    let full_ms = gcra.tolerance / 1_000;
    if full_ms > i128::from(bounds.max_ttl_s) * 1_000 {
        return Err(format!(
            "a full bucket lasts (burst + 1) × period / count = {full_ms} ms, more than \
             GATEWAY_RATELIMIT_MAX_TTL_S ({} s)",
            bounds.max_ttl_s
        ));
    }
    Ok(gcra)
}

/// The policies of `GATEWAY_POLICIES_FILE`, or none when it is unset.
#[derive(Debug)]
pub struct Policies {
    table: RwLock<Arc<Table>>,
    file: Option<PathBuf>,
    operations: Operations,
    bounds: Bounds,
    /// The runtime overrides and denies, the global layer's included.
    overrides: Arc<overrides::Overrides>,
}

impl Policies {
    /// No policies from a file: the global layer alone (which overrides may still change).
    pub fn none(bounds: Bounds, clock: Clock) -> Self {
        Self {
            table: RwLock::default(),
            file: None,
            operations: Operations::new(),
            bounds,
            overrides: Arc::new(overrides::Overrides::new(clock)),
        }
    }

    /// The runtime overrides and denies.
    pub fn overrides(&self) -> &Arc<overrides::Overrides> {
        &self.overrides
    }

    /// The bounds every budget keeps.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Loads `file`; a file that cannot be read, does not parse or names an unknown operation
    /// is an error (the gateway refuses to start on it).
    pub fn load(
        file: &Path,
        operations: Operations,
        bounds: Bounds,
        clock: Clock,
    ) -> Result<Self, Invalid> {
        const VAR: &str = "GATEWAY_POLICIES_FILE";
        let text = read_file(VAR, file, "TOML file of limit policies")?;
        let table = String::from_utf8(text)
            .map_err(|_| "not UTF-8 text".to_owned())
            .and_then(|text| parse(&text, &operations, bounds))
            .map_err(|e| {
                Invalid::new(
                    VAR,
                    format!("{}: {e}", file.display()),
                    "write [[policy]] tables as docs/policies.md shows, or leave it unset",
                )
            })?;
        tracing::info!(policies = table.policies.len(), file = %file.display(), "limit policies loaded");
        Ok(Self {
            table: RwLock::new(Arc::new(table)),
            file: Some(file.to_owned()),
            operations,
            bounds,
            overrides: Arc::new(overrides::Overrides::new(clock)),
        })
    }

    /// The policies in force now.
    pub fn current(&self) -> Arc<Table> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads the file again; on any error the policies in force stay and the error is logged.
    /// `Err` says why, for the caller that wants to know (tests).
    pub fn reload(&self) -> Result<(), String> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let parsed = std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|text| parse(&text, &self.operations, self.bounds));
        match parsed {
            Ok(table) => {
                tracing::info!(policies = table.policies.len(), file = %file.display(), "limit policies reloaded");
                *self.table.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(table);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, file = %file.display(), "limit policies file refused; keeping the policies in force");
                Err(e)
            }
        }
    }

    /// Reloads on `SIGHUP` and whenever the file's modification time or size changes (checked
    /// every second), as the clients file is (docs/clients.md): polling sees a config-map
    /// style symlink swap too.
    pub fn watch(self: &Arc<Self>) {
        if let Some(file) = self.file.clone() {
            crate::reload::watch(
                vec![file],
                WATCH_EVERY,
                Arc::downgrade(self),
                |policies: &Self| {
                    let _ = policies.reload();
                },
            );
        }
    }
}

/// How often the policies file is checked for changes.
const WATCH_EVERY: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;

    fn operations() -> Operations {
        [
            (
                "seckillBuy",
                "POST",
                "/v1/seckill/vouchers/{voucher_id}/orders",
            ),
            ("uvAdd", "POST", "/v1/uv/{page}"),
        ]
        .into_iter()
        .map(|(id, m, r)| (id.to_owned(), (m.to_owned(), r.to_owned())))
        .collect()
    }

    const BOUNDS: Bounds = Bounds { max_ttl_s: 86_400 };

    fn rule(name: &str, ops: &str, by: &str, numbers: &str) -> String {
        format!("[[policy]]\nname = \"{name}\"\noperations = [{ops}]\nby = \"{by}\"\n{numbers}\n")
    }

    #[test]
    fn policies_are_looked_up_by_route_and_method() {
        let text = rule(
            "buy",
            "\"seckillBuy\"",
            "user",
            "burst = 0\ncount = 1\nperiod = 60",
        ) + &rule(
            "all",
            "\"*\"",
            "header:X-Tenant",
            "burst = 9\ncount = 10\nperiod = 1\nmode = \"shadow\"",
        );
        let table = parse(&text, &operations(), BOUNDS).unwrap();
        let buy = table.applying("POST", "/v1/seckill/vouchers/{voucher_id}/orders");
        let names: Vec<_> = buy.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["buy", "all"]);
        assert_eq!(buy[0].header_item, "\"buy\";q=1;w=60");
        assert!(buy[1].shadow);
        assert_eq!(buy[1].by, By::Header("x-tenant".to_owned()));
        let uv: Vec<_> = table
            .applying("POST", "/v1/uv/{page}")
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(uv, ["all"]);
        // A route the document does not list (the fallback) gets the "*" policies only.
        assert_eq!(table.applying("GET", "/nope").len(), 1);
        assert_eq!(table.for_operation("uvAdd"), ["all"]);
        assert!(Table::default()
            .applying("POST", "/v1/uv/{page}")
            .is_empty());
    }

    #[test]
    fn bad_rules_are_refused_with_the_rule_named() {
        let ok = "burst = 0\ncount = 1\nperiod = 60";
        for (text, want) in [
            (rule("a", "\"nope\"", "user", ok), "no operation \"nope\""),
            (
                rule("global", "\"*\"", "user", ok),
                "global layer's own name",
            ),
            (rule("a b", "\"*\"", "user", ok), "name must be"),
            (rule("a", "\"*\"", "who", ok), "by must be"),
            (rule("a", "\"*\"", "header:bad name", ok), "by must be"),
            (rule("a", "", "user", ok), "operations is empty"),
            (
                rule("a", "\"*\"", "user", "burst = 0\ncount = 0\nperiod = 60"),
                "count must be",
            ),
            (
                rule("a", "\"*\"", "user", "burst = 0\ncount = 1\nperiod = 0"),
                "period must be",
            ),
            (
                rule(
                    "a",
                    "\"*\"",
                    "user",
                    "burst = 2000000\ncount = 1\nperiod = 1",
                ),
                "burst is at most",
            ),
            (
                rule("a", "\"*\"", "user", "burst = 0\ncount = 1\nperiod = 90000"),
                "GATEWAY_RATELIMIT_MAX_TTL_S",
            ),
            (
                rule(
                    "a",
                    "\"*\"",
                    "user",
                    "burst = 0\ncount = 1\nperiod = 1\nmode = \"loud\"",
                ),
                "mode must be",
            ),
            (
                rule("a", "\"*\"", "user", ok) + &rule("a", "\"*\"", "client", ok),
                "used twice",
            ),
            (
                rule("a", "\"*\"", "user", "count = 1\nperiod = 1"),
                "missing field `burst`",
            ),
        ] {
            let err = parse(&text, &operations(), BOUNDS).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            if !want.starts_with("missing") {
                assert!(err.starts_with("policy #"), "names the rule: {err}");
            }
        }
    }
}
