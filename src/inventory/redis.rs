//! The inventory on Redis: one `SCAN` step on one master (a Cluster's masters in turn, each
//! reached by the route's own client for it), then one pipeline measuring what it found. Each
//! command is O(1) or sampled (`MEMORY USAGE … SAMPLES 5`), and `SCAN` examines at most its
//! `COUNT` (≤ 1,000) buckets, so no call of a page holds Redis long (tests/redis_time.rs).

use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand};

use super::logic::Cursor;
use super::{InventoryStore, Kind, Measured, Owner, Refused, Scanned};
use crate::store::error::StoreError;
use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};

/// Elements `MEMORY USAGE` samples of a collection: Redis's own default, written out so a
/// page's cost does not hang on it.
const SAMPLES: u32 = 5;

impl InventoryStore for RedisStore {
    async fn inventory_scan(
        &self,
        from: Option<&Cursor>,
        kind: Option<Kind>,
        count: u32,
    ) -> Result<Result<Scanned, Refused>, StoreError> {
        let masters = self.pool.masters();
        let (node, scan) = match Cursor::start(from, self.cluster, &masters) {
            Ok(Some(at)) => at,
            Ok(None) => return Err(StoreError::Unavailable("no Redis master serves".into())),
            Err(refused) => return Ok(Err(refused)),
        };
        let pattern = self.keys.pattern(Kind::glob(kind));
        let keys = &self.keys;
        let step = self
            .pool
            .on_master(&node, |client| async move {
                let (next, found) = scan_step(&client, scan, &pattern, count).await?;
                let ours = found
                    .into_iter()
                    .filter_map(|key| owned(keys, key, kind))
                    .collect();
                Ok((next, measure(&client, ours).await?))
            })
            .await
            .map_err(map_err)?;
        let Some((next, keys)) = step else {
            return Ok(Err(Refused::NodeGone(node)));
        };
        let next = Cursor::after(&node, next, self.cluster, &masters);
        Ok(Ok(Scanned { keys, next }))
    }
}

/// `key` with its owner, when it is of `kind` (any, when `None`).
fn owned(keys: &Keys, key: String, kind: Option<Kind>) -> Option<(String, Owner)> {
    let owner = super::logic::owner(keys.unprefixed(&key)?);
    kind.is_none_or(|k| k == owner.kind).then_some((key, owner))
}

/// `SCAN cursor MATCH pattern COUNT count` on one server: its next cursor and the keys.
async fn scan_step(
    client: &Client,
    cursor: u64,
    pattern: &str,
    count: u32,
) -> Result<(u64, Vec<String>), Error> {
    let scan = CustomCommand::new_static("SCAN", ClusterHash::Random, false);
    let args = vec![
        cursor.to_string(),
        "MATCH".to_owned(),
        pattern.to_owned(),
        "COUNT".to_owned(),
        count.to_string(),
    ];
    let reply: Value = client.custom(scan, args).await?;
    let mut parts = reply.into_array().into_iter();
    let (Some(next), Some(found)) = (parts.next(), parts.next()) else {
        return Err(Error::new(ErrorKind::Parse, "SCAN answered no cursor"));
    };
    let next = next
        .as_string()
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| Error::new(ErrorKind::Parse, "SCAN answered a cursor not a number"))?;
    let found = found
        .into_array()
        .into_iter()
        .filter_map(|k| k.as_string())
        .collect();
    Ok((next, found))
}

/// `TYPE`, `MEMORY USAGE` and `PTTL` of every key, in one pipeline. A key gone since `SCAN`
/// (`none`, `-2`) is left out, and so is one whose slot moved away meanwhile (`MOVED`,
/// `ASK`): the master it moved to lists it, if the walk has not passed it.
async fn measure(client: &Client, keys: Vec<(String, Owner)>) -> Result<Vec<Measured>, Error> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let pipeline = client.pipeline();
    for (key, _) in &keys {
        pipeline.r#type::<(), _>(key.as_str()).await?;
        pipeline
            .memory_usage::<(), _>(key.as_str(), Some(SAMPLES))
            .await?;
        pipeline.pttl::<(), _>(key.as_str()).await?;
    }
    let replies = pipeline.try_all::<Value>().await;
    if replies.len() != keys.len() * 3 {
        // The whole pipeline failed: one error for all.
        let e = replies.into_iter().find_map(Result::err);
        return Err(e.unwrap_or_else(|| Error::new(ErrorKind::Parse, "a short pipeline reply")));
    }
    let mut measured = Vec::with_capacity(keys.len());
    let mut replies = replies.into_iter();
    for (key, owner) in keys {
        let (value_type, bytes, ttl) = (
            replies.next().unwrap_or(Ok(Value::Null)),
            replies.next().unwrap_or(Ok(Value::Null)),
            replies.next().unwrap_or(Ok(Value::Null)),
        );
        let (value_type, bytes, ttl) = match (value_type, bytes, ttl) {
            (Ok(t), Ok(b), Ok(p)) => (t, b, p),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) if moved(&e) => continue,
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return Err(e),
        };
        let value_type = value_type.as_string().unwrap_or_default();
        let ttl = ttl.as_i64().unwrap_or(-2);
        if value_type == "none" || ttl == -2 {
            continue;
        }
        measured.push(Measured {
            key,
            owner,
            value_type,
            bytes: bytes.as_u64(),
            ttl_ms: (ttl >= 0).then_some(ttl),
        });
    }
    Ok(measured)
}

/// A reply saying the key's slot is served elsewhere now (a reshard under way or done).
fn moved(e: &Error) -> bool {
    ["MOVED", "ASK", "TRYAGAIN"]
        .iter()
        .any(|p| e.details().starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::super::logic::owner;
    use super::super::Kind;
    use crate::store::keys::Keys;
    use crate::types::{Day, Month, Name, UserId};

    /// A key, and the kind, resource, namespace and part it is read back as.
    type Case<'a> = (String, Kind, Option<&'a str>, Option<&'a str>, &'a str);

    /// The keys every domain really spells (their `impl Keys` blocks), each read back as the
    /// kind, resource, namespace and part the inventory shows: a domain that changes a
    /// spelling, or adds a key, fails here until the inventory knows it.
    #[test]
    fn every_domain_key_is_read_back() {
        let keys = Keys::new("gw:");
        let name = |s: &str| Name::try_from(s.to_owned()).unwrap();
        let scoped = Name::scoped("c:web", &name("mail"));
        let day = Day(chrono::NaiveDate::from_ymd_opt(2026, 11, 29).unwrap());
        let month = Month::of(day.0);
        let (v, f, p) = (name("v1"), name("news"), name("home"));
        let bucket = crate::ratelimit::Bucket::Key(Name::scoped("c:web", &name("login")));
        let window = crate::ratelimit::logic::WindowKind::Sliding;
        let cases: Vec<Case<'_>> = vec![
            (keys.voucher(&v), Kind::Voucher, Some("v1"), None, "voucher"),
            (
                keys.voucher_buyers(&v),
                Kind::Voucher,
                Some("v1"),
                None,
                "buyers",
            ),
            (
                keys.voucher_user_orders(&v),
                Kind::Voucher,
                Some("v1"),
                None,
                "user_orders",
            ),
            (
                keys.voucher_orders(&v),
                Kind::Voucher,
                Some("v1"),
                None,
                "orders",
            ),
            (
                keys.voucher_idempotency(&v, "ab"),
                Kind::Voucher,
                Some("v1"),
                None,
                "idempotency",
            ),
            (
                keys.voucher_dead_letters(&v),
                Kind::Voucher,
                Some("v1"),
                None,
                "dead_letters",
            ),
            (
                keys.voucher_ledger_attempts(&v),
                Kind::Voucher,
                Some("v1"),
                None,
                "ledger_attempts",
            ),
            (
                keys.voucher_registry(),
                Kind::Voucher,
                None,
                None,
                "registry",
            ),
            (keys.voucher_index(), Kind::Voucher, None, None, "index"),
            (keys.voucher_revs(), Kind::Voucher, None, None, "index_revs"),
            (
                keys.voucher_backfill(),
                Kind::Voucher,
                None,
                None,
                "index_backfill",
            ),
            (keys.layer_index(), Kind::Layer, None, None, "index"),
            (
                keys.layer_expiries(),
                Kind::Layer,
                None,
                None,
                "index_expiry",
            ),
            (
                keys.queue_idempotency(&scoped, "ab"),
                Kind::Queue,
                Some("mail"),
                Some("c:web"),
                "idempotency",
            ),
            (
                keys.dedup_meta(&f),
                Kind::Filter,
                Some("news"),
                None,
                "meta",
            ),
            (
                keys.dedup_layer(&f, 3),
                Kind::Filter,
                Some("news"),
                None,
                "layer",
            ),
            (
                keys.dedup_layer_piece(&f, 3, 7),
                Kind::Filter,
                Some("news"),
                None,
                "layer_piece",
            ),
            (
                keys.dedup_native(&f),
                Kind::Filter,
                Some("news"),
                None,
                "native",
            ),
            (
                keys.geo(&name("sicily")),
                Kind::Layer,
                Some("sicily"),
                None,
                "places",
            ),
            (
                keys.uv_day(&p, day),
                Kind::Uv,
                Some("home"),
                None,
                "visitors",
            ),
            (keys.pv_day(&p, day), Kind::Uv, Some("home"), None, "views"),
            (
                keys.uv_idempotency(&p, "ab"),
                Kind::Uv,
                Some("home"),
                None,
                "idempotency",
            ),
            (keys.uv_visitor_key(), Kind::Uv, None, None, "visitor_key"),
            (
                keys.uv_scratch(&p, 1),
                Kind::Uv,
                Some("home"),
                None,
                "scratch",
            ),
            (
                keys.checkin_months(UserId(42), &[month]).remove(0),
                Kind::Checkin,
                Some("42"),
                None,
                "month",
            ),
            (
                keys.cohort_chunk(3, day),
                Kind::Checkin,
                Some("3"),
                None,
                "cohort_chunk",
            ),
            (
                keys.cohort_registry(),
                Kind::Checkin,
                None,
                None,
                "cohort_registry",
            ),
            (
                keys.ratelimit(&bucket),
                Kind::Ratelimit,
                Some("login"),
                Some("c:web"),
                "gcra",
            ),
            (
                keys.ratelimit_idempotency(&bucket, "ab"),
                Kind::Ratelimit,
                Some("login"),
                Some("c:web"),
                "idempotency",
            ),
            (
                keys.ratelimit_window(&name("login"), window),
                Kind::Ratelimit,
                Some("login"),
                None,
                "sliding_window",
            ),
            (
                keys.ratelimit_window_idempotency(&name("login"), window, "ab"),
                Kind::Ratelimit,
                Some("login"),
                None,
                "idempotency",
            ),
            (
                keys.lock(&scoped),
                Kind::Lock,
                Some("mail"),
                Some("c:web"),
                "lock",
            ),
            (
                keys.ratelimit(&crate::ratelimit::Bucket::Client("ip:10.0.0.1".into())),
                Kind::Policy,
                Some("global"),
                Some("ip:10.0.0.1"),
                "bucket",
            ),
            (
                keys.ratelimit(&crate::ratelimit::Bucket::Policy {
                    identity: "u:42".into(),
                    policy: "search".into(),
                }),
                Kind::Policy,
                Some("search"),
                Some("u:42"),
                "bucket",
            ),
        ];
        let mut cases = cases;
        let overrides = keys.limiter_overrides();
        cases.push((overrides[0].clone(), Kind::Policy, None, None, "overrides"));
        cases.push((
            overrides[1].clone(),
            Kind::Policy,
            None,
            None,
            "overrides_version",
        ));
        for (key, part) in keys
            .queue(&scoped)
            .into_iter()
            .zip(["due", "flight", "meta", "pay", "dead", "ctr"])
        {
            cases.push((key, Kind::Queue, Some("mail"), Some("c:web"), part));
        }
        for (key, kind, resource, namespace, part) in cases {
            let o = owner(keys.unprefixed(&key).unwrap());
            let got = (
                o.kind,
                o.resource.as_deref(),
                o.namespace.as_deref(),
                o.part,
            );
            assert_eq!(got, (kind, resource, namespace, part), "{key}");
            let glob = Kind::glob(Some(kind));
            assert!(
                glob_matches(glob, keys.unprefixed(&key).unwrap()),
                "{glob} misses {key}"
            );
        }
    }

    /// What the `impl Keys` blocks spell and the test above reads back; a new key of a
    /// domain fails [`every_key_the_domains_spell_is_known`] until it is there.
    const READ_BACK: [&str; 34] = [
        "voucher",
        "voucher_index",
        "voucher_revs",
        "voucher_backfill",
        "layer_index",
        "layer_expiries",
        "voucher_buyers",
        "voucher_user_orders",
        "voucher_orders",
        "voucher_idempotency",
        "voucher_dead_letters",
        "voucher_ledger_attempts",
        "voucher_registry",
        "queue",
        "queue_idempotency",
        "dedup_meta",
        "dedup_layer",
        "dedup_layer_piece",
        "dedup_native",
        "geo",
        "uv_day",
        "pv_day",
        "uv_idempotency",
        "uv_visitor_key",
        "uv_scratch",
        "checkin_months",
        "cohort_chunk",
        "cohort_registry",
        "ratelimit",
        "ratelimit_idempotency",
        "ratelimit_window",
        "ratelimit_window_idempotency",
        "lock",
        "limiter_overrides",
    ];
    /// What they spell that is no key: pub/sub channels, and groups of keys read back above.
    const NOT_KEYS: [&str; 9] = [
        "voucher_events",
        "queue_events",
        "queue_bell",
        "queue_bell_pattern",
        "uv_events",
        "lock_released_channel",
        "voucher_sale",
        "voucher_group",
        "checkin_month",
    ];

    /// Every method of every domain's `impl Keys` block is a key read back above or no key at
    /// all: a domain that adds a key (a new index, a new record) is told here to teach the
    /// inventory its kind and part ([`super::super::logic::owner`], docs/inventory.md).
    #[test]
    fn every_key_the_domains_spell_is_known() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src];
        let (mut unknown, mut seen) = (Vec::new(), Vec::new());
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if path.ends_with("store/keys.rs") {
                continue;
            }
            let blocks = text
                .split("\nimpl Keys {")
                .skip(1)
                .map(|b| b.split("\n}").next().unwrap());
            for line in blocks.flat_map(str::lines) {
                // The block's own methods: indented once, whatever their visibility.
                let Some(code) = line.strip_prefix("    ").filter(|c| !c.starts_with(' ')) else {
                    continue;
                };
                let Some((before, rest)) = code.split_once("fn ") else {
                    continue;
                };
                if before.contains(['/', '=', '"']) {
                    continue;
                }
                let name = rest.split(['(', '<']).next().unwrap().to_owned();
                if !READ_BACK.contains(&name.as_str()) && !NOT_KEYS.contains(&name.as_str()) {
                    unknown.push(format!("{}: Keys::{name}", path.display()));
                }
                seen.push(name);
            }
        }
        let missed: Vec<&str> = READ_BACK
            .into_iter()
            .filter(|n| !seen.iter().any(|s| s == n))
            .collect();
        assert!(
            missed.is_empty(),
            "read back, but spelled by no domain: {missed:?}"
        );
        assert!(
            unknown.is_empty(),
            "keys the inventory cannot read back: {unknown:#?}"
        );
    }

    /// Redis's glob, as far as the kinds' globs use it: `*` and one `[…]` class.
    fn glob_matches(glob: &str, key: &str) -> bool {
        let (head, tail) = glob.split_once('*').unwrap_or((glob, ""));
        assert!(tail.is_empty(), "{glob}");
        let mut key = key.chars();
        let mut pattern = head.chars();
        while let Some(p) = pattern.next() {
            let Some(k) = key.next() else { return false };
            let ok = if p == '[' {
                let class: String = pattern.by_ref().take_while(|c| *c != ']').collect();
                class.contains(k)
            } else {
                p == k
            };
            if !ok {
                return false;
            }
        }
        true
    }
}
