//! Pure rules of the inventory: which kind, resource and part a key is, read off its spelling
//! (`<kind>:{<tag>}` then `:<rest>`, as `src/store/keys.rs` lays keys out); the glob that finds
//! a kind with `SCAN … MATCH`; a walk's cursor and how it moves from master to master; and the
//! largest keys kept of a walk.

use std::fmt;

use super::{Kind, Measured, Owner, Refused};

impl Kind {
    pub const ALL: [Kind; 10] = [
        Kind::Voucher,
        Kind::Queue,
        Kind::Filter,
        Kind::Layer,
        Kind::Uv,
        Kind::Checkin,
        Kind::Ratelimit,
        Kind::Lock,
        Kind::Policy,
        Kind::Other,
    ];

    /// The glob (after the prefix) that `SCAN … MATCH` finds this kind's keys with: one glob
    /// per kind, since `SCAN` takes one. It may match a few keys of other kinds (`rl:` keys
    /// hold no `rl[gpo]:` ones, but `sk*` would match a `skx:` key), which [`owner`] sorts out.
    pub fn glob(kind: Option<Kind>) -> &'static str {
        match kind {
            Some(Kind::Voucher) => "sk*",
            Some(Kind::Queue) => "q:*",
            Some(Kind::Filter) => "bf:*",
            Some(Kind::Layer) => "geo*",
            Some(Kind::Uv) => "[pu]v*",
            Some(Kind::Checkin) => "ck*",
            Some(Kind::Ratelimit) => "rl:*",
            Some(Kind::Lock) => "lk:*",
            Some(Kind::Policy) => "rl[gpo]:*",
            Some(Kind::Other) | None => "*",
        }
    }
}

/// Whose name the tag of a key is.
enum Whose {
    /// The resource's own name.
    Named,
    /// A name inside a caller's namespace (`<namespace>|<name>`, `types::Name::scoped`).
    Scoped,
    /// The whole kind's: the key has no resource.
    Shared,
    /// A limiter bucket: the tag is the identity counted, the resource is the policy (`rlg`:
    /// the global layer, `rlp`: the policy named after the tag).
    Bucket,
}

/// The queue's keys, as `queue_common.lua` takes them.
const QUEUE_PARTS: [&str; 6] = ["due", "flight", "meta", "pay", "dead", "ctr"];

/// Who owns the key `rest` (the key without the prefix): its kind, resource and part, or kind
/// `other` when no kind spells it so.
pub fn owner(rest: &str) -> Owner {
    spelled(rest).unwrap_or(Owner {
        kind: Kind::Other,
        resource: None,
        namespace: None,
        part: "unknown",
    })
}

fn spelled(rest: &str) -> Option<Owner> {
    let (token, tagged) = rest.split_once(":{")?;
    let (tag, after) = tagged.split_once('}')?;
    let suffix = match after {
        "" => "",
        more => more.strip_prefix(':').filter(|s| !s.is_empty())?,
    };
    let (kind, part, whose) = part_of(token, tag, suffix)?;
    let (resource, namespace) = match whose {
        Whose::Named => (Some(tag), None),
        Whose::Scoped => match tag.split_once('|') {
            Some((namespace, name)) => (Some(name), Some(namespace)),
            None => (Some(tag), None),
        },
        Whose::Shared => (None, None),
        Whose::Bucket if token == "rlg" => (Some("global"), Some(tag)),
        Whose::Bucket => (Some(suffix), Some(tag)),
    };
    Some(Owner {
        kind,
        resource: resource.map(str::to_owned),
        namespace: namespace.map(str::to_owned),
        part,
    })
}

/// The kind, part and owner of a key spelled `<token>:{<tag>}` then `:<suffix>` (or no
/// suffix): each domain's `impl Keys` block, read backwards.
fn part_of(token: &str, tag: &str, suffix: &str) -> Option<(Kind, &'static str, Whose)> {
    use Kind::*;
    use Whose::*;
    let idempotency = |s: &str| s.starts_with("idem:");
    Some(match (token, suffix) {
        ("sk", "") => (Voucher, "voucher", Named),
        ("sk", "buyers") => (Voucher, "buyers", Named),
        ("sk", "user_orders") => (Voucher, "user_orders", Named),
        ("sk", "orders") => (Voucher, "orders", Named),
        ("sk", "dead") => (Voucher, "dead_letters", Named),
        ("sk", "attempts") => (Voucher, "ledger_attempts", Named),
        ("sk", s) if idempotency(s) => (Voucher, "idempotency", Named),
        ("skr", "") if tag == "vouchers" => (Voucher, "registry", Shared),
        ("skr", "begin") if tag == "vouchers" => (Voucher, "index", Shared),
        ("skr", "revs") if tag == "vouchers" => (Voucher, "index_revs", Shared),
        ("skr", "backfill") if tag == "vouchers" => (Voucher, "index_backfill", Shared),
        ("q", s) if idempotency(s) => (Queue, "idempotency", Scoped),
        ("q", s) => (Queue, *QUEUE_PARTS.iter().find(|p| **p == s)?, Scoped),
        ("bf", "") => (Filter, "meta", Named),
        ("bf", "rb") => (Filter, "native", Named),
        ("bf", s) if numbers(s, 1) => (Filter, "layer", Named),
        ("bf", s) if numbers(s, 2) => (Filter, "layer_piece", Named),
        ("geo", "") => (Layer, "places", Named),
        ("geor", "") if tag == "layers" => (Layer, "index", Shared),
        ("geor", "expiry") if tag == "layers" => (Layer, "index_expiry", Shared),
        ("uv", s) if idempotency(s) => (Uv, "idempotency", Named),
        ("uv", s) if dated(s, 10) => (Uv, "visitors", Named),
        ("pv", s) if dated(s, 10) => (Uv, "views", Named),
        ("uvk", "") if tag == "uv" => (Uv, "visitor_key", Shared),
        ("uvt", s) if numbers(s, 1) => (Uv, "scratch", Named),
        ("ck", s) if dated(s, 7) => (Checkin, "month", Named),
        ("ckd", s) if dated(s, 10) => (Checkin, "cohort_chunk", Named),
        ("ckr", "") if tag == "chunks" => (Checkin, "cohort_registry", Shared),
        ("rl", "") => (Ratelimit, "gcra", Scoped),
        ("rl", "sw") => (Ratelimit, "sliding_window", Scoped),
        ("rl", "fw") => (Ratelimit, "fixed_window", Scoped),
        ("rl", s) if idempotency(s.trim_start_matches("sw:").trim_start_matches("fw:")) => {
            (Ratelimit, "idempotency", Scoped)
        }
        ("lk", "") => (Lock, "lock", Scoped),
        ("rlg", "") => (Policy, "bucket", Bucket),
        ("rlp", s) if !s.is_empty() => (Policy, "bucket", Bucket),
        ("rlo", "") if tag == "overrides" => (Policy, "overrides", Shared),
        ("rlo", "v") if tag == "overrides" => (Policy, "overrides_version", Shared),
        _ => return None,
    })
}

/// `s` is `n` runs of digits joined by `:`.
fn numbers(s: &str, n: usize) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == n
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `s` is a `YYYY-MM-DD` day (`len` 10) or a `YYYY-MM` month (`len` 7).
fn dated(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        })
}

/// Where a walk goes on: the master it is on (a Cluster's `host:port`; `None` on a single
/// server) and that master's `SCAN` cursor. Written `<scan>` on a single server and
/// `<scan>@<host:port>` on a Cluster (docs/inventory.md "Walking the keys"): opaque to a
/// client, readable to an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub node: Option<String>,
    pub scan: u64,
}

impl Cursor {
    /// Reads a cursor; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (scan, node) = match text.split_once('@') {
            Some((scan, node)) => (scan, Some(node)),
            None => (text, None),
        };
        let scan = scan
            .parse::<u64>()
            .map_err(|_| format!("not a cursor: {text:?}"))?;
        let node = match node {
            None => None,
            Some(node) => {
                let well_formed = node
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
                if !well_formed {
                    return Err(format!("not a cursor: {text:?} (no host:port after @)"));
                }
                Some(node.to_owned())
            }
        };
        Ok(Self { node, scan })
    }

    /// Where a walk starts, or goes on from `from`, among the store's `masters` (sorted; one
    /// for a single server): the master and its `SCAN` cursor. `Ok(None)`: the store has no
    /// master yet (a Cluster whose slot table is not read).
    pub fn start(
        from: Option<&Cursor>,
        cluster: bool,
        masters: &[String],
    ) -> Result<Option<(String, u64)>, Refused> {
        let first = || masters.first().map(|m| (m.clone(), 0));
        Ok(match (from, cluster) {
            (None, _) => first(),
            (Some(Cursor { node: None, scan }), false) => {
                masters.first().map(|m| (m.clone(), *scan))
            }
            (
                Some(Cursor {
                    node: Some(node),
                    scan,
                }),
                true,
            ) => Some((node.clone(), *scan)),
            (Some(Cursor { node: Some(_), .. }), false) => {
                return Err(Refused::Cursor(
                    "this cursor names a Cluster master, and the store is a single server".into(),
                ))
            }
            (Some(Cursor { node: None, .. }), true) => {
                return Err(Refused::Cursor(
                    "this cursor is a single server's, and the store is a Cluster".into(),
                ))
            }
        })
    }

    /// Where a walk goes on once master `node` answered `SCAN` cursor `scan`: on that master
    /// while its cursor is not 0, then from the start of the next master in `masters`' order
    /// (the first whose name sorts after `node`, so a master that left meanwhile does not stop
    /// the walk); `None` when every master is done.
    pub fn after(node: &str, scan: u64, cluster: bool, masters: &[String]) -> Option<Cursor> {
        if scan != 0 {
            let node = cluster.then(|| node.to_owned());
            return Some(Cursor { node, scan });
        }
        if !cluster {
            return None;
        }
        masters.iter().find(|m| m.as_str() > node).map(|m| Cursor {
            node: Some(m.clone()),
            scan: 0,
        })
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(node) => write!(f, "{}@{node}", self.scan),
            None => write!(f, "{}", self.scan),
        }
    }
}

/// Keeps in `top` the `limit` largest of `top` and `found`, largest first (by `MEMORY USAGE`;
/// ties by key, so the answer does not depend on the order `SCAN` met them). A key found twice
/// (`SCAN` may return one again) is kept once.
pub fn keep_largest(top: &mut Vec<Measured>, found: Vec<Measured>, limit: usize) {
    for key in found {
        if !top.iter().any(|k| k.key == key.key) {
            top.push(key);
        }
    }
    top.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.key.cmp(&b.key)));
    top.truncate(limit);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(rest: &str) -> (Kind, Option<&str>, Option<&str>, &'static str) {
        let o = Box::leak(Box::new(owner(rest)));
        (
            o.kind,
            o.resource.as_deref(),
            o.namespace.as_deref(),
            o.part,
        )
    }

    #[test]
    fn scoped_names_show_their_namespace() {
        assert_eq!(
            of("q:{c:web|mail}:due"),
            (Kind::Queue, Some("mail"), Some("c:web"), "due")
        );
        assert_eq!(of("q:{mail}:pay"), (Kind::Queue, Some("mail"), None, "pay"));
        assert_eq!(
            of("lk:{ip:2001:db8::|report:daily}"),
            (
                Kind::Lock,
                Some("report:daily"),
                Some("ip:2001:db8::"),
                "lock"
            )
        );
        assert_eq!(
            of("rl:{c:web|login:7}:sw:idem:ab12"),
            (
                Kind::Ratelimit,
                Some("login:7"),
                Some("c:web"),
                "idempotency"
            )
        );
        assert_eq!(
            of("rlp:{u:42}:search"),
            (Kind::Policy, Some("search"), Some("u:42"), "bucket")
        );
        assert_eq!(
            of("rlg:{ip:10.0.0.1}"),
            (Kind::Policy, Some("global"), Some("ip:10.0.0.1"), "bucket")
        );
    }

    #[test]
    fn what_no_kind_spells_is_other() {
        for rest in [
            "durable:{gw:sk:{v1}}",
            "sk:{v1}:nope",
            "q:{x}:events:more",
            "bf:{f}:a",
            "uv:{p}:2026-1-01",
            "nobraces",
            "sk:{v1}:",
        ] {
            assert_eq!(owner(rest).kind, Kind::Other, "{rest}");
        }
    }

    #[test]
    fn cursors_read_back_what_they_write() {
        for text in ["0", "17", "42@127.0.0.1:7001", "0@redis-2.internal:6379"] {
            assert_eq!(Cursor::parse(text).unwrap().to_string(), text);
        }
        for bad in [
            "",
            "x",
            "-1",
            "1@",
            "1@host",
            "1@:7001",
            "1@h:99999",
            "1@h:7@x",
        ] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_walk_visits_each_master_in_turn() {
        let masters = ["a:1".to_owned(), "b:1".to_owned(), "c:1".to_owned()];
        let at = |node: &str, scan| Cursor {
            node: Some(node.to_owned()),
            scan,
        };
        assert_eq!(
            Cursor::start(None, true, &masters),
            Ok(Some(("a:1".into(), 0)))
        );
        assert_eq!(Cursor::after("a:1", 9, true, &masters), Some(at("a:1", 9)));
        assert_eq!(Cursor::after("a:1", 0, true, &masters), Some(at("b:1", 0)));
        assert_eq!(Cursor::after("c:1", 0, true, &masters), None);
        // A master gone meanwhile: the walk goes on with the next one by name.
        assert_eq!(
            Cursor::after("b:1", 0, true, &["a:1".into(), "c:1".into()]),
            Some(at("c:1", 0))
        );
        let single = ["h:6379".to_owned()];
        assert_eq!(
            Cursor::after("h:6379", 5, false, &single),
            Some(Cursor {
                node: None,
                scan: 5
            })
        );
        assert_eq!(Cursor::after("h:6379", 0, false, &single), None);
        assert!(Cursor::start(Some(&at("a:1", 3)), false, &single).is_err());
        let plain = Cursor {
            node: None,
            scan: 3,
        };
        assert!(Cursor::start(Some(&plain), true, &masters).is_err());
        assert_eq!(Cursor::start(None, true, &[]), Ok(None));
    }

    #[test]
    fn the_largest_are_kept_once_each() {
        let key = |name: &str, bytes| Measured {
            key: name.to_owned(),
            owner: owner(name),
            value_type: "string".into(),
            bytes: Some(bytes),
            ttl_ms: None,
        };
        let mut top = Vec::new();
        keep_largest(&mut top, vec![key("a", 10), key("b", 30), key("c", 20)], 2);
        keep_largest(&mut top, vec![key("b", 30), key("d", 25)], 2);
        let names: Vec<&str> = top.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(names, ["b", "d"]);
    }
}
