//! The operator's inventory (docs/inventory.md): resources of every kind made through the API,
//! then the walk of `GET /v1/admin/keys` in small steps finds each of their keys (every one the
//! servers hold under the prefix, as `redis-cli --scan` lists them), each with its kind,
//! owner, type, size and TTL; the cursors it refuses; and the largest keys first.
//!
//! Each scenario runs on servers of its own (a private `redis-server`, a private 3-master
//! Cluster), so that a walk of the whole keyspace is short and holds only this test's keys.

use std::collections::{BTreeMap, BTreeSet};

use redis_gateway::config::StoreChoice;
use serde_json::{json, Value};

use crate::common::{
    clients_file, settings, Backend, Gateway, RedisCluster, RedisProcess, ADMIN_TOKEN,
};

crate::contract_tests!(
    a_small_step_walk_finds_every_key_with_its_owner,
    cursors_and_bounds_are_checked,
    the_largest_keys_come_first,
);

/// The servers of one scenario.
enum Servers {
    None,
    One(RedisProcess),
    Cluster(RedisCluster),
}

impl Servers {
    fn nodes(&self) -> Vec<&RedisProcess> {
        match self {
            Servers::None => Vec::new(),
            Servers::One(p) => vec![p],
            Servers::Cluster(c) => c.nodes.iter().collect(),
        }
    }

    /// Every key under `prefix`, as `redis-cli --scan` on each server lists them.
    fn keys(&self, prefix: &str) -> BTreeSet<String> {
        let pattern = format!("{prefix}*");
        self.nodes()
            .iter()
            .flat_map(|n| {
                let out = n
                    .cli(&["--scan", "--pattern", &pattern])
                    .expect("redis-cli answers");
                out.lines().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect()
    }
}

/// A gateway on servers of its own, with a clients file naming the client `web` (key
/// `web-secret`), whose queues, locks and rate-limit keys live in its namespace; and its prefix.
async fn private_gateway(backend: Backend) -> (Servers, Gateway, String) {
    let mut s = settings(Backend::Memory);
    let servers = match backend {
        Backend::Memory => Servers::None,
        Backend::Redis => Servers::One(RedisProcess::start(&[], false)),
        Backend::Cluster => Servers::Cluster(RedisCluster::start()),
    };
    match &servers {
        Servers::None => {}
        Servers::One(p) => s.store = StoreChoice::Redis(p.url()),
        Servers::Cluster(c) => s.store = StoreChoice::Redis(c.url()),
    }
    s.clients.file = Some(clients_file(&[("web", "web-secret", None)]));
    let prefix = s.key_prefix.clone();
    (servers, Gateway::with_settings(s).await, prefix)
}

/// Makes a resource of every kind: a voucher bought from under an idempotency key, a page's
/// visits, a check-in, a geo layer, a dedup filter, and `web`'s rate-limit key, lock and queue.
async fn make_one_of_each(gw: &Gateway) {
    let now = chrono::Utc::now();
    let window = json!({"stock": 10, "begin": (now - chrono::Duration::hours(1)).to_rfc3339(),
                        "end": (now + chrono::Duration::hours(1)).to_rfc3339()});
    let (s, b) = gw.admin_put("/v1/seckill/vouchers/v1", window).await;
    assert_eq!(s, 201, "{b}");
    let (s, _, b) = gw
        .post_once(
            "/v1/seckill/vouchers/v1/orders",
            "k1",
            &json!({"user_id": 42}),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    for (path, body) in [
        ("/v1/uv/home", json!({"visitors": ["a", "b"]})),
        ("/v1/checkins/42", json!({})),
        ("/v1/dedup/news/items", json!({"items": ["story-1"]})),
    ] {
        let (s, b) = gw.post(path, body).await;
        assert!(s.is_success(), "{path}: {s} {b}");
    }
    let (s, b) = gw
        .put("/v1/geo/sicily/Catania", json!({"lon": 15.08, "lat": 37.5}))
        .await;
    assert_eq!(s, 201, "{b}");
    for (path, body) in [
        (
            "/v1/ratelimit/check",
            json!({"key": "login", "max_burst": 5, "count_per_period": 1, "period": 60}),
        ),
        ("/v1/locks/report", json!({"owner": "w1", "ttl_ms": 60_000})),
        (
            "/v1/queues/mail/jobs",
            json!({"payload": {"to": "a@example.com"}}),
        ),
    ] {
        let request = gw
            .client
            .post(gw.url(path))
            .header("x-api-key", "web-secret");
        let (s, b) = gw.send(request.json(&body)).await;
        assert!(s.is_success(), "{path}: {s} {b}");
    }
}

/// Walks `/v1/admin/keys` with `query` until the cursor ends: every key listed, by key (a key
/// `SCAN` returned twice is listed once), and how many pages it took.
async fn walk(gw: &Gateway, query: &str) -> (BTreeMap<String, Value>, usize) {
    let (keys, pages, _) = walk_from(gw, query, None, |_| false).await;
    (keys, pages)
}

/// [`walk`] from `cursor` (the start when `None`), stopping early at the first cursor `stop`
/// holds for: also the cursor it stopped at.
async fn walk_from(
    gw: &Gateway,
    query: &str,
    mut cursor: Option<String>,
    stop: impl Fn(&str) -> bool,
) -> (BTreeMap<String, Value>, usize, Option<String>) {
    let mut keys = BTreeMap::new();
    for pages in 1..10_000 {
        let at = cursor
            .as_deref()
            .map_or(String::new(), |c| format!("&cursor={c}"));
        let (s, page) = gw.admin_get(&format!("/v1/admin/keys?{query}{at}")).await;
        assert_eq!(s, 200, "{page}");
        for key in page["keys"].as_array().expect("keys") {
            keys.insert(key["key"].as_str().unwrap().to_owned(), key.clone());
        }
        cursor = page
            .get("cursor")
            .map(|c| c.as_str().expect("a cursor is text").to_owned());
        if cursor.as_deref().is_none_or(&stop) {
            return (keys, pages, cursor);
        }
    }
    panic!("the walk did not end");
}

async fn a_small_step_walk_finds_every_key_with_its_owner(backend: Backend) {
    let (servers, gw, prefix) = private_gateway(backend).await;
    make_one_of_each(&gw).await;
    let (listed, pages) = walk(&gw, "count=2").await;
    if backend == Backend::Memory {
        assert_eq!(
            (listed.len(), pages),
            (0, 1),
            "the embedded store keeps no keys"
        );
        return;
    }
    let held = servers.keys(&prefix);
    assert_eq!(
        listed.keys().cloned().collect::<BTreeSet<_>>(),
        held,
        "the walk lists every key the servers hold"
    );
    assert!(
        pages > 3,
        "{pages} pages of count 2 for {} keys",
        held.len()
    );
    for key in listed.values() {
        assert_ne!(key["kind"], "other", "{key}");
        assert!(key["bytes"].as_u64().is_some_and(|b| b > 0), "{key}");
        assert!(
            key["type"].is_string() && !key["ttl_ms"].is_string(),
            "{key}"
        );
    }
    let one = |suffix: &str| listed[&format!("{prefix}{suffix}")].clone();
    let voucher = one("sk:{v1}");
    assert_eq!(
        (
            &voucher["kind"],
            &voucher["resource"],
            &voucher["part"],
            &voucher["type"]
        ),
        (
            &json!("voucher"),
            &json!("v1"),
            &json!("voucher"),
            &json!("hash")
        )
    );
    assert_eq!(voucher["ttl_ms"], Value::Null);
    assert_eq!(one("sk:{v1}:orders")["type"], "stream");
    let idempotency = listed
        .values()
        .find(|k| k["kind"] == "voucher" && k["part"] == "idempotency")
        .expect("the purchase's idempotency record");
    assert!(
        idempotency["ttl_ms"].as_i64().is_some_and(|t| t > 0),
        "{idempotency}"
    );
    let lock = listed
        .values()
        .find(|k| k["kind"] == "lock")
        .expect("the lock");
    assert_eq!(
        (&lock["resource"], &lock["namespace"]),
        (&json!("report"), &json!("c:web"))
    );
    // The lease, and the fencing counter's grace after it (docs/locks.md).
    assert!(
        lock["ttl_ms"].as_i64().is_some_and(|t| t > 60_000),
        "{lock}"
    );
    let queue: Vec<&Value> = listed.values().filter(|k| k["kind"] == "queue").collect();
    assert!(!queue.is_empty());
    for key in &queue {
        assert_eq!(
            (&key["resource"], &key["namespace"]),
            (&json!("mail"), &json!("c:web")),
            "{key}"
        );
    }
    let kinds: BTreeSet<&str> = listed
        .values()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "voucher",
        "queue",
        "filter",
        "layer",
        "uv",
        "checkin",
        "ratelimit",
        "lock",
    ] {
        assert!(kinds.contains(kind), "no {kind} key in {kinds:?}");
    }
    // A kind's walk lists that kind's keys, all of them.
    let (queues, _) = walk(&gw, "kind=queue&count=3").await;
    let expected: BTreeSet<&str> = queue.iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(
        queues.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        expected
    );
}

async fn cursors_and_bounds_are_checked(backend: Backend) {
    let (_servers, gw, _) = private_gateway(backend).await;
    for query in [
        "cursor=x",
        "cursor=-1",
        "cursor=1@nohost",
        "count=0",
        "count=1001",
        "kind=nope",
        "unknown=1",
    ] {
        let (s, b) = gw.admin_get(&format!("/v1/admin/keys?{query}")).await;
        assert_eq!(
            (s.as_u16(), b["code"].as_str()),
            (400, Some("invalid_argument")),
            "{query}: {b}"
        );
    }
    for query in ["limit=0", "limit=101", "cursor=y"] {
        let (s, b) = gw.admin_get(&format!("/v1/admin/keys/big?{query}")).await;
        assert_eq!(s, 400, "{query}: {b}");
    }
    // A cursor of the other kind of store.
    let foreign = match backend {
        Backend::Cluster => "5",
        _ => "5@127.0.0.1:7001",
    };
    let (s, b) = gw
        .admin_get(&format!("/v1/admin/keys?cursor={foreign}"))
        .await;
    assert_eq!(s, 400, "{b}");
    if backend == Backend::Cluster {
        // A master that is no Cluster's (port 1): gone, as one that failed over is.
        let (s, b) = gw.admin_get("/v1/admin/keys?cursor=0@127.0.0.1:1").await;
        assert_eq!(
            (s.as_u16(), b["code"].as_str()),
            (409, Some("cursor_node_gone")),
            "{b}"
        );
        assert_eq!(b["node"], "127.0.0.1:1");
        let (s, b) = gw
            .admin_get("/v1/admin/keys/big?cursor=12@127.0.0.1:1")
            .await;
        assert_eq!(s, 409, "{b}");
    }
    // Admin routes: no token, a wrong one, an API client's key are all 401.
    for path in ["/v1/admin/keys", "/v1/admin/keys/big"] {
        let (s, b) = gw.get(path).await;
        assert_eq!(
            (s.as_u16(), b["code"].as_str()),
            (401, Some("unauthorized")),
            "{path}"
        );
        let request = gw.client.get(gw.url(path)).bearer_auth("not-the-token");
        assert_eq!(gw.send(request).await.0, 401, "{path}");
        let request = gw
            .client
            .get(gw.url(path))
            .header("x-api-key", "web-secret");
        assert_eq!(gw.send(request).await.0, 401, "{path}");
        let request = gw.client.get(gw.url(path)).bearer_auth(ADMIN_TOKEN);
        assert_eq!(gw.send(request).await.0, 200, "{path}");
    }
}

async fn the_largest_keys_come_first(backend: Backend) {
    let (servers, gw, prefix) = private_gateway(backend).await;
    make_one_of_each(&gw).await;
    let places: Vec<Value> = (0..400)
        .map(|i| json!({"member": format!("place-{i:04}-{}", "x".repeat(40)), "lon": 13.0 + f64::from(i) / 1000.0, "lat": 38.0}))
        .collect();
    let (s, b) = gw.post("/v1/geo/big", json!({"places": places})).await;
    assert!(s.is_success(), "{b}");
    let (s, big) = gw.admin_get("/v1/admin/keys/big?limit=3").await;
    assert_eq!(s, 200, "{big}");
    assert_eq!(big["complete"], true, "{big}");
    assert!(big.get("cursor").is_none(), "{big}");
    let keys = big["keys"].as_array().unwrap();
    if backend == Backend::Memory {
        assert_eq!((keys.len(), &big["examined"]), (0, &json!(0)));
        return;
    }
    assert_eq!(big["examined"], servers.keys(&prefix).len(), "{big}");
    assert_eq!(keys.len(), 3, "{big}");
    assert_eq!(
        (&keys[0]["key"], &keys[0]["kind"], &keys[0]["resource"]),
        (
            &json!(format!("{prefix}geo:{{big}}")),
            &json!("layer"),
            &json!("big")
        ),
        "{big}"
    );
    let sizes: Vec<u64> = keys.iter().map(|k| k["bytes"].as_u64().unwrap()).collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    // One kind: only its keys.
    let (s, big) = gw
        .admin_get("/v1/admin/keys/big?kind=voucher&limit=100")
        .await;
    assert_eq!(s, 200, "{big}");
    let vouchers = big["keys"].as_array().unwrap();
    assert!(vouchers.len() >= 4, "{big}");
    assert!(vouchers.iter().all(|k| k["kind"] == "voucher"), "{big}");
    if let Servers::One(redis) = &servers {
        more_keys_than_one_budget(&gw, redis, &prefix).await;
    }
}

/// Past one request's budget (5,000 keys measured) the answer says it is not complete, and its
/// cursor goes on until one is: together they examine every key.
async fn more_keys_than_one_budget(gw: &Gateway, redis: &RedisProcess, prefix: &str) {
    // Keys of no kind (`other`), made in one call: the budget counts every key measured.
    let fill = "for i = 1, 6000 do redis.call('SET', ARGV[1] .. i, 'x') end";
    let filler = format!("{prefix}filler:");
    redis.cli(&["eval", fill, "0", &filler]).expect("EVAL");
    let total = servers_key_count(redis, prefix);
    let (mut examined, mut requests, mut cursor) = (0, 0, String::new());
    let mut tops = Vec::new();
    loop {
        let (s, big) = gw
            .admin_get(&format!("/v1/admin/keys/big?limit=1&cursor={cursor}"))
            .await;
        assert_eq!(s, 200, "{big}");
        requests += 1;
        examined += big["examined"].as_u64().unwrap();
        assert!(big["examined"].as_u64().unwrap() <= 5_000 + 1_000, "{big}");
        tops.push(big["keys"][0].clone());
        match big.get("cursor") {
            Some(c) => {
                assert_eq!(big["complete"], false, "{big}");
                cursor = c.as_str().unwrap().to_owned();
            }
            None => break,
        }
    }
    assert!(requests >= 2, "{requests} requests");
    assert!(examined >= total, "{examined} of {total} keys examined");
    let largest = tops.iter().max_by_key(|k| k["bytes"].as_u64()).unwrap();
    assert_eq!(largest["key"], format!("{prefix}geo:{{big}}"), "{tops:?}");
}

fn servers_key_count(redis: &RedisProcess, prefix: &str) -> u64 {
    let out = redis
        .cli(&["--scan", "--pattern", &format!("{prefix}*")])
        .unwrap();
    out.lines().count() as u64
}

/// On a Cluster a walk survives a reshard: the cursor stays good while slots move, and keys
/// moved from a master the walk is done with to one it has yet to walk are found there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_walk_survives_a_reshard() {
    let (servers, gw, prefix) = private_gateway(Backend::Cluster).await;
    let Servers::Cluster(cluster) = &servers else {
        unreachable!("a Cluster")
    };
    for i in 0..60 {
        let place = json!({"lon": 13.0, "lat": 38.0});
        let (s, b) = gw.put(&format!("/v1/geo/l{i}/m"), place).await;
        assert_eq!(s, 201, "{b}");
    }
    let held = servers.keys(&prefix);
    // The masters in the walk's order: by `host:port`.
    let mut masters: Vec<(String, &RedisProcess)> = cluster
        .nodes
        .iter()
        .map(|n| (format!("127.0.0.1:{}", n.port), n))
        .collect();
    masters.sort_by(|a, b| a.0.cmp(&b.0));
    // Walk until the cursor is on the second master: the first is done.
    let (mut listed, _, cursor) =
        walk_from(&gw, "count=2", None, |c| c.ends_with(&masters[1].0)).await;
    let on_first = || {
        let pattern = format!("{prefix}*");
        let out = masters[0]
            .1
            .cli(&["--scan", "--pattern", &pattern])
            .unwrap();
        out.lines().count()
    };
    let before = on_first();
    // Move a third of the first master's slots, keys and all, to the last master.
    let id = |n: &RedisProcess| n.cli(&["cluster", "myid"]).unwrap().trim().to_owned();
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", "reshard", &masters[0].0])
        .args([
            "--cluster-from",
            &id(masters[0].1),
            "--cluster-to",
            &id(masters[2].1),
        ])
        .args(["--cluster-slots", "2000", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster reshard");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(on_first() < before, "keys moved: {before} → {}", on_first());
    assert!(cursor.is_some(), "more masters to walk");
    let (rest, _, _) = walk_from(&gw, "count=2", cursor, |_| false).await;
    listed.extend(rest);
    assert_eq!(
        listed.into_keys().collect::<BTreeSet<_>>(),
        held,
        "every key, the moved ones where they moved to"
    );
    assert_eq!(servers.keys(&prefix), held, "the reshard kept every key");
}
