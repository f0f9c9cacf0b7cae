//! Lock scenarios (docs/api.md "Distributed locks"): mutual exclusion under 50 concurrent
//! acquirers, fencing tokens that only grow (across release, expiry, a lost counter and a
//! Redis restart), refusals for non-holders, renewal, waking waiters on release, and two
//! gateway instances sharing one store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{self, script_runs, Backend, Gateway, RedisCluster, RedisProcess};

crate::contract_tests!(
    fifty_concurrent_acquirers_never_overlap,
    only_the_holder_releases,
    expiry_then_reacquire_gives_a_bigger_token,
    renew_extends_and_reacquire_by_the_owner_keeps_the_token,
    a_waiting_acquirer_is_woken_by_the_release,
    two_gateways_share_locks,
    ranges_are_checked,
    acquisitions_past_the_waiting_cap_answer_at_once,
    a_long_wait_costs_more_the_longer_it_may_wait,
);

fn fresh(label: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{label}-{}", N.fetch_add(1, Ordering::Relaxed))
}

async fn acquire(gw: &Gateway, name: &str, owner: &str, ttl_ms: u64, wait_ms: u64) -> (u16, Value) {
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{name}"),
            json!({"owner": owner, "ttl_ms": ttl_ms, "wait_ms": wait_ms}),
        )
        .await;
    (status.as_u16(), body)
}

async fn release(gw: &Gateway, name: &str, owner: &str, token: u64) -> (u16, Value) {
    let (status, body) = gw
        .delete(&format!("/v1/locks/{name}?owner={owner}&token={token}"))
        .await;
    (status.as_u16(), body)
}

fn token(body: &Value) -> u64 {
    body["token"]
        .as_u64()
        .unwrap_or_else(|| panic!("token in {body}"))
}

/// Runs `redis-cli` against the backend's server (`None` on memory).
fn redis_cli(backend: Backend, args: &[&str]) -> Option<String> {
    let out = match backend {
        Backend::Memory => return None,
        Backend::Redis => common::shared_redis().cli(args),
        Backend::Cluster => {
            let mut cluster_args = vec!["-c"];
            cluster_args.extend_from_slice(args);
            common::shared_cluster().nodes[0].cli(&cluster_args)
        }
    };
    Some(out.expect("redis-cli reaches the server").trim().to_owned())
}

async fn fifty_concurrent_acquirers_never_overlap(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let name = fresh("fifty");
    let tasks = (0..50).map(|i| {
        let gw = gw.clone();
        let name = name.clone();
        tokio::spawn(async move {
            let owner = format!("w{i}");
            // Each waits (server-side) until it holds the lock; a wait that runs out on a busy
            // machine simply waits again.
            let (held_from, tok) = loop {
                let (status, body) = acquire(&gw, &name, &owner, 30_000, 10_000).await;
                match status {
                    200 => break (Instant::now(), token(&body)),
                    409 => assert_eq!(body["code"], "lock_held", "{body}"),
                    other => panic!("{other}: {body}"),
                }
            };
            tokio::time::sleep(Duration::from_millis(2)).await;
            let held_until = Instant::now();
            assert_eq!(release(&gw, &name, &owner, tok).await.0, 204);
            (held_from, held_until, tok)
        })
    });
    let mut intervals: Vec<(Instant, Instant, u64)> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("acquirer"))
        .collect();
    intervals.sort_by_key(|(from, ..)| *from);
    for pair in intervals.windows(2) {
        let (_, until, tok) = pair[0];
        let (from, _, next) = pair[1];
        // The next holder heard of its acquisition only after this one had asked to release.
        assert!(from > until, "two holders at once");
        assert!(
            next > tok,
            "tokens increase in acquisition order: {tok} then {next}"
        );
    }
    let mut tokens: Vec<u64> = intervals.iter().map(|i| i.2).collect();
    tokens.dedup();
    assert_eq!(tokens.len(), 50, "every token distinct");
}

async fn only_the_holder_releases(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let name = fresh("cad");
    let (status, a) = acquire(&gw, &name, "alice", 60_000, 0).await;
    assert_eq!(status, 200, "{a}");
    let t = token(&a);
    for (owner, tok) in [("bob", t), ("alice", t + 1), ("alice", t - 1)] {
        let (status, body) = release(&gw, &name, owner, tok).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (409, Some("lock_lost")),
            "{body}"
        );
    }
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(
        (&state["held"], &state["owner"], state.get("token")),
        (&json!(true), &json!("alice"), None),
        "the holder, never its token: {state}"
    );
    assert_eq!(release(&gw, &name, "alice", t).await.0, 204);
    let (status, body) = release(&gw, &name, "alice", t).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("lock_lost")));
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(state, json!({"name": name, "held": false}));
    // Free again: anyone may take it, with a new token.
    let (status, b) = acquire(&gw, &name, "bob", 60_000, 0).await;
    assert_eq!(status, 200);
    assert!(token(&b) > t);
}

async fn expiry_then_reacquire_gives_a_bigger_token(backend: Backend) {
    let settings = common::settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let name = fresh("exp");
    let (_, a) = acquire(&gw, &name, "alice", 100, 0).await;
    let t1 = token(&a);
    // Bob waits (server-side) for the lease to end: nobody releases it.
    let (status, b) = acquire(&gw, &name, "bob", 60_000, 10_000).await;
    assert_eq!(status, 200, "{b}");
    let t2 = token(&b);
    assert!(t2 > t1, "{t1} then {t2}");
    // Alice's lease is gone: renewing or releasing it is refused.
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{name}/renew"),
            json!({"owner": "alice", "token": t1, "ttl_ms": 1000}),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (409, Some("lock_lost"))
    );
    assert_eq!(release(&gw, &name, "alice", t1).await.0, 409);
    assert_eq!(release(&gw, &name, "bob", t2).await.0, 204);
    // Even with the fencing counter gone (as after its expiry), tokens keep growing.
    let fence = format!("{prefix}lk:{{{name}}}:fence");
    if let Some(ttl) = redis_cli(backend, &["pttl", &fence]) {
        let ttl: i64 = ttl.parse().unwrap();
        assert!(ttl > 60_000, "the counter outlives the lease: {ttl}");
        redis_cli(backend, &["del", &fence]);
    }
    let (_, c) = acquire(&gw, &name, "carol", 60_000, 0).await;
    assert!(token(&c) > t2, "{t2} then {c}");
}

async fn renew_extends_and_reacquire_by_the_owner_keeps_the_token(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let name = fresh("renew");
    let (_, a) = acquire(&gw, &name, "alice", 1_000, 0).await;
    let t = token(&a);
    let (status, r) = gw
        .post(
            &format!("/v1/locks/{name}/renew"),
            json!({"owner": "alice", "token": t, "ttl_ms": 3_600_000}),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    assert_eq!(
        (&r["token"], &r["owner"], &r["name"]),
        (&json!(t), &json!("alice"), &json!(name))
    );
    let at = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v["expires_at"].as_str().unwrap())
            .unwrap()
            .timestamp_millis()
    };
    assert!(at(&r) >= at(&a) + 3_598_000, "{a} then {r}");
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert!((at(&state) - at(&r)).abs() <= 1, "{state} vs {r}");
    // The same owner acquiring again extends it with the same token.
    let (status, again) = acquire(&gw, &name, "alice", 2_000, 0).await;
    assert_eq!((status, token(&again)), (200, t));
    // Someone else is refused, and told for how long.
    let (status, body) = acquire(&gw, &name, "bob", 1_000, 0).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("lock_held")),
        "{body}"
    );
    let retry = body["retry_after_ms"].as_u64().unwrap();
    assert!(0 < retry && retry <= 2_000, "{body}");
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{name}/renew"),
            json!({"owner": "bob", "token": t, "ttl_ms": 1000}),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (409, Some("lock_lost"))
    );
}

async fn a_waiting_acquirer_is_woken_by_the_release(backend: Backend) {
    let settings = common::settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Arc::new(Gateway::with_settings(settings).await);
    let name = fresh("wake");
    // A lease far longer than the wait: only the release can let the waiter in.
    let (_, a) = acquire(&gw, &name, "alice", 600_000, 0).await;
    let waiter = {
        let gw = gw.clone();
        let name = name.clone();
        tokio::spawn(async move { acquire(&gw, &name, "bob", 60_000, 10_000).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(release(&gw, &name, "alice", token(&a)).await.0, 204);
    let (status, b) = waiter.await.unwrap();
    assert_eq!(status, 200, "the waiter got the lock: {b}");
    assert!(token(&b) > token(&a));
    assert_eq!(b["owner"], "bob");
    if backend == Backend::Redis {
        // Nobody waits any more: the gateway drops its subscription to the lock's channel.
        let channel = format!("{prefix}lk:{{{name}}}:released");
        let mut subscribers = String::new();
        for _ in 0..100 {
            subscribers = redis_cli(backend, &["pubsub", "shardnumsub", &channel]).unwrap();
            if subscribers.ends_with("\n0") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(subscribers.ends_with("\n0"), "{subscribers}");
    }
}

async fn two_gateways_share_locks(backend: Backend) {
    if backend == Backend::Memory {
        return; // state is per process
    }
    let settings = common::settings(backend);
    let gw1 = Arc::new(Gateway::with_settings(settings.clone()).await);
    let gw2 = Arc::new(Gateway::with_settings(settings).await);
    let name = fresh("shared");
    let (_, a) = acquire(&gw1, &name, "alice", 600_000, 0).await;
    let (status, body) = acquire(&gw2, &name, "bob", 1_000, 0).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("lock_held")),
        "{body}"
    );
    let (_, state) = gw2.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(
        (&state["held"], &state["owner"]),
        (&json!(true), &json!("alice")),
        "{a}"
    );
    // A waiter on the other instance is woken by a release made through the first.
    let waiter = {
        let gw2 = gw2.clone();
        let name = name.clone();
        tokio::spawn(async move { acquire(&gw2, &name, "bob", 60_000, 10_000).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(release(&gw1, &name, "alice", token(&a)).await.0, 204);
    let (status, b) = waiter.await.unwrap();
    assert_eq!(status, 200, "{b}");
    assert!(token(&b) > token(&a));
    assert_eq!(release(&gw1, &name, "bob", token(&b)).await.0, 204);
}

async fn ranges_are_checked(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let bad = [
        ("/v1/locks/a", json!({"owner": "o", "ttl_ms": 99})),
        ("/v1/locks/a", json!({"owner": "o", "ttl_ms": 3_600_001})),
        (
            "/v1/locks/a",
            json!({"owner": "o", "ttl_ms": 1000, "wait_ms": 10_001}),
        ),
        ("/v1/locks/a", json!({"owner": "o w", "ttl_ms": 1000})),
        ("/v1/locks/a", json!({"ttl_ms": 1000})),
        ("/v1/locks/a%20b", json!({"owner": "o", "ttl_ms": 1000})),
        (
            "/v1/locks/a/renew",
            json!({"owner": "o", "token": 1, "ttl_ms": 50}),
        ),
    ];
    for (path, body) in bad {
        let (status, r) = gw.post(path, body.clone()).await;
        assert_eq!(
            (status.as_u16(), r["code"].as_str()),
            (400, Some("invalid_argument")),
            "{path} {body}: {r}"
        );
    }
    let (status, r) = gw.delete("/v1/locks/a?owner=o").await;
    assert_eq!(
        (status.as_u16(), r["code"].as_str()),
        (400, Some("invalid_argument")),
        "{r}"
    );
    for ok in [100, 3_600_000] {
        let name = fresh("range");
        let (status, r) = acquire(&gw, &name, "o", ok, 10_000).await;
        assert_eq!(status, 200, "{r}");
    }
}

/// Fencing tokens survive a Redis restart from its append-only file (Redis only: the memory
/// backend has nothing to restart from, and its tokens follow the clock anyway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_keep_increasing_across_a_redis_restart() {
    let mut redis = RedisProcess::start(&["--appendonly", "yes", "--appendfsync", "always"], false);
    let mut s = common::settings(Backend::Memory);
    s.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(s).await;
    let (_, a) = acquire(&gw, "persisted", "alice", 600_000, 0).await;
    assert_eq!(release(&gw, "persisted", "alice", token(&a)).await.0, 204);
    let (_, b) = acquire(&gw, "persisted", "bob", 600_000, 0).await;
    assert!(token(&b) > token(&a));

    redis.stop();
    redis.restart();
    let mut state = Value::Null;
    for _ in 0..100 {
        let (status, body) = gw.get("/v1/locks/persisted").await;
        if status == 200 {
            state = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state["owner"], "bob", "the holder came back: {state}");
    assert_eq!(release(&gw, "persisted", "bob", token(&b)).await.0, 204);
    let (status, c) = acquire(&gw, "persisted", "carol", 600_000, 0).await;
    assert_eq!(status, 200, "{c}");
    assert!(token(&c) > token(&b), "{b} then {c}");
}

/// Redis going away is a 503 on every lock route, a waiting acquisition included, and locks
/// work again once it is back (Redis only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_is_503_then_recovers() {
    let mut redis = RedisProcess::start(&[], false);
    let mut s = common::settings(Backend::Memory);
    s.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(s).await;
    let (_, a) = acquire(&gw, "down", "alice", 600_000, 0).await;
    redis.stop();
    for (status, body) in [
        acquire(&gw, "down", "bob", 1_000, 10_000).await,
        acquire(&gw, "down", "bob", 1_000, 0).await,
        release(&gw, "down", "alice", token(&a)).await,
        {
            let (status, body) = gw.get("/v1/locks/down").await;
            (status.as_u16(), body)
        },
    ] {
        assert_eq!(
            (status, body["code"].as_str()),
            (503, Some("backend_unavailable")),
            "{body}"
        );
    }
    redis.restart();
    let mut recovered = false;
    for _ in 0..100 {
        if acquire(&gw, "down", "carol", 60_000, 0).await.0 == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "locks work again once Redis is back");
}

/// At most `MAX_WAITING_ACQUISITIONS` acquisitions wait on one lock in one instance: one more
/// is answered at once (`409 lock_held` with `retry_after_ms`, as if its wait_ms were 0), while
/// those seated keep waiting and another lock's acquisitions still wait.
async fn acquisitions_past_the_waiting_cap_answer_at_once(backend: Backend) {
    let cap = redis_gateway::locks::MAX_WAITING_ACQUISITIONS;
    let gw = Arc::new(Gateway::start(backend).await);
    let name = fresh("capped");
    let (_, a) = acquire(&gw, &name, "alice", 600_000, 0).await;
    let waiting: Vec<_> = (0..cap)
        .map(|i| {
            let (gw, name) = (gw.clone(), name.clone());
            tokio::spawn(async move { acquire(&gw, &name, &format!("w{i}"), 60_000, 10_000).await })
        })
        .collect();
    // Let them all arrive and sit down.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(waiting.iter().all(|w| !w.is_finished()), "they wait");
    let (status, body) = acquire(&gw, &name, "late", 60_000, 10_000).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("lock_held")),
        "{body}"
    );
    assert!(body["retry_after_ms"].as_u64().unwrap() > 60_000, "{body}");
    // Answered before its wait ended: every acquisition that started waiting before it, as
    // long, still waits.
    assert!(
        waiting.iter().all(|w| !w.is_finished()),
        "answered at once, not at the end of its wait"
    );
    let other = fresh("not-capped");
    acquire(&gw, &other, "alice", 600_000, 0).await;
    let started = Instant::now();
    let (status, _) = acquire(&gw, &other, "bob", 60_000, 1_500).await;
    assert_eq!(status, 409);
    assert!(
        started.elapsed() >= Duration::from_millis(1_500),
        "another lock's acquisition waited its wait"
    );
    // Those seated are still served: the release hands the lock to one of them.
    assert_eq!(release(&gw, &name, "alice", token(&a)).await.0, 204);
    let served = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(w) = waiting.iter().position(|w| w.is_finished()) {
                return w;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("a waiting acquisition got the lock");
    for (i, w) in waiting.into_iter().enumerate() {
        if i == served {
            let (status, body) = w.await.unwrap();
            assert_eq!(status, 200, "{body}");
        } else {
            w.abort();
        }
    }
}

/// An acquisition costs the global limiter 1 + wait_ms / 1000: a long wait pays for what it
/// holds (a waiting place and a connection, and its attempt at the end).
async fn a_long_wait_costs_more_the_longer_it_may_wait(backend: Backend) {
    let mut s = common::settings(backend);
    s.global.enabled = true;
    s.global.max_burst = 39; // a limit of 40, refilling one a minute
    s.global.count_per_period = 1;
    s.global.period = 60;
    let gw = Gateway::with_settings(s).await;
    let name = fresh("paid");
    let remaining = |r: &reqwest::Response| -> i64 {
        r.headers()["ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let send = |owner: &str, wait_ms: Option<u64>| {
        let mut body = json!({"owner": owner, "ttl_ms": 60_000});
        if let Some(w) = wait_ms {
            body["wait_ms"] = w.into();
        }
        gw.client
            .post(gw.url(&format!("/v1/locks/{name}")))
            .json(&body)
            .send()
    };
    let r = send("alice", None).await.unwrap();
    assert_eq!(
        (r.status().as_u16(), remaining(&r)),
        (200, 39),
        "no wait: 1"
    );
    // Charged for the wait it asked for, known before it waits: alice holds it already, so
    // this one answers at once and still pays 1 + 10.
    let r = send("alice", Some(10_000)).await.unwrap();
    assert_eq!(
        (r.status().as_u16(), remaining(&r)),
        (200, 39 - 11),
        "a 10 s wait: 11"
    );
    let r = send("alice", Some(2_500)).await.unwrap();
    assert_eq!((r.status().as_u16(), remaining(&r)), (200, 28 - 3), "1 + 2");
    let r = send("alice", Some(999)).await.unwrap();
    assert_eq!(
        (r.status().as_u16(), remaining(&r)),
        (200, 25 - 1),
        "under a second: 1"
    );
}

/// The Redis servers of a private store (script counts are the test's own).
enum Private {
    Redis(RedisProcess),
    Cluster(RedisCluster),
}

impl Private {
    fn start(backend: Backend) -> Self {
        match backend {
            Backend::Redis => Self::Redis(RedisProcess::start(&[], false)),
            Backend::Cluster => Self::Cluster(RedisCluster::start()),
            Backend::Memory => unreachable!("counts script runs"),
        }
    }

    /// Script runs on every node.
    fn runs(&self) -> u64 {
        match self {
            Self::Redis(r) => script_runs(r),
            Self::Cluster(c) => c.nodes.iter().map(script_runs).sum(),
        }
    }

    async fn until_runs(&self, n: u64) {
        tokio::time::timeout(Duration::from_secs(20), async {
            while self.runs() < n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the acquisitions tried");
    }

    /// Settings for gateways on this store; instances made from one value share its keys.
    fn settings(&self) -> redis_gateway::config::Settings {
        let mut s = common::settings(Backend::Memory);
        s.store = redis_gateway::config::StoreChoice::Redis(match self {
            Self::Redis(r) => r.url(),
            Self::Cluster(c) => c.url(),
        });
        s
    }
}

type Waiting = tokio::task::JoinHandle<(u16, Value)>;

/// `n` acquisitions of `name` (owners `{prefix}0`..) waiting up to 10 s, once each has made
/// its attempts before sleeping (one, then one more once it listens for releases).
async fn waiting_acquisitions(
    store: &Private,
    gw: &Arc<Gateway>,
    name: &str,
    prefix: &str,
    n: usize,
) -> Vec<Waiting> {
    let before = store.runs();
    let waiting = (0..n)
        .map(|i| {
            let (gw, name, owner) = (gw.clone(), name.to_owned(), format!("{prefix}{i}"));
            tokio::spawn(async move { acquire(&gw, &name, &owner, 600_000, 10_000).await })
        })
        .collect();
    store.until_runs(before + 2 * n as u64).await;
    // Time to go to sleep after those attempts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    waiting
}

fn answered(waiting: &[Waiting]) -> usize {
    waiting.iter().filter(|w| w.is_finished()).count()
}

async fn until_answered(waiting: &[Waiting], n: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while answered(waiting) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("acquisitions answered");
}

/// The holder among the answered acquisitions (taken out of `waiting`).
async fn winner(waiting: &mut Vec<Waiting>) -> Value {
    let at = waiting.iter().position(|w| w.is_finished()).unwrap();
    let (status, body) = waiting.remove(at).await.unwrap();
    assert_eq!(status, 200, "answered without the lock: {body}");
    body
}

/// With 30 acquisitions waiting, one release costs the store a bounded number of script runs
/// (its own and one acquisition's), not one per waiter: exactly one waiter gets the lock, the
/// others keep waiting and get it in turn as each holder releases.
async fn one_release_wakes_one_of_many_waiting_acquisitions(backend: Backend) {
    const WAITERS: usize = 30;
    let store = Private::start(backend);
    let gw = Arc::new(Gateway::with_settings(store.settings()).await);
    let name = "many";
    // Loads the scripts on the lock's node, so that each run below is one run.
    let (_, a) = acquire(&gw, name, "alice", 600_000, 0).await;
    assert_eq!(release(&gw, name, "alice", token(&a)).await.0, 204);
    let (_, a) = acquire(&gw, name, "alice", 600_000, 0).await;
    let mut waiting = waiting_acquisitions(&store, &gw, name, "w", WAITERS).await;
    let before = store.runs();
    assert_eq!(release(&gw, name, "alice", token(&a)).await.0, 204);
    until_answered(&waiting, 1).await;
    // Time for any other acquisition that was woken to try.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = store.runs() - before;
    assert_eq!(answered(&waiting), 1, "one acquisition answered");
    let mut holder = winner(&mut waiting).await;
    let mut tokens = vec![token(&a), token(&holder)];
    // The others, still waiting, get it in turn.
    let before = store.runs();
    while !waiting.is_empty() {
        let owner = holder["owner"].as_str().unwrap().to_owned();
        assert_eq!(release(&gw, name, &owner, token(&holder)).await.0, 204);
        until_answered(&waiting, 1).await;
        holder = winner(&mut waiting).await;
        tokens.push(token(&holder));
    }
    let rest = store.runs() - before;
    eprintln!(
        "{backend:?}, {WAITERS} acquisitions waiting: {first} script runs for the first release, \
         {rest} for the next {}",
        WAITERS - 1
    );
    assert!(first <= 3, "{first} script runs for one release");
    assert!(
        rest <= 3 * (WAITERS as u64 - 1),
        "{rest} script runs for {} releases",
        WAITERS - 1
    );
    assert!(tokens.windows(2).all(|t| t[0] < t[1]), "{tokens:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_one_of_many_waiting_acquisitions_redis() {
    one_release_wakes_one_of_many_waiting_acquisitions(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_one_of_many_waiting_acquisitions_cluster() {
    one_release_wakes_one_of_many_waiting_acquisitions(Backend::Cluster).await;
}

/// Two instances on one Redis, 10 acquisitions waiting on each: a release through one wakes
/// one acquisition in each (the other hears it announced), not every one, and not two in the
/// releasing instance (its own announcement coming back is not counted again). The one that
/// loses to the other instance keeps waiting, and every waiter gets the lock in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_one_waiting_acquisition_per_instance() {
    let store = Private::start(Backend::Redis);
    let s = store.settings();
    let gw_a = Arc::new(Gateway::with_settings(s.clone()).await);
    let gw_b = Arc::new(Gateway::with_settings(s).await);
    let name = "two";
    // Loads the scripts, so that each run below is one run.
    let (_, a) = acquire(&gw_b, name, "alice", 600_000, 0).await;
    assert_eq!(release(&gw_b, name, "alice", token(&a)).await.0, 204);
    let (_, a) = acquire(&gw_b, name, "alice", 600_000, 0).await;
    let on_a = waiting_acquisitions(&store, &gw_a, name, "a", 10).await;
    let on_b = waiting_acquisitions(&store, &gw_b, name, "b", 10).await;
    let before = store.runs();
    assert_eq!(release(&gw_b, name, "alice", token(&a)).await.0, 204);
    let mut all: Vec<Waiting> = on_a.into_iter().chain(on_b).collect();
    until_answered(&all, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = store.runs() - before;
    eprintln!("two instances, 10 acquisitions waiting on each: {runs} script runs for one release");
    // The release and one attempt per instance.
    assert!(runs <= 3, "{runs} script runs");
    assert_eq!(answered(&all), 1);
    let mut holder = winner(&mut all).await;
    let mut tokens = vec![token(&a), token(&holder)];
    // Released through either instance in turn, the lock reaches every waiter of both.
    let before = store.runs();
    let mut releases = 0;
    while !all.is_empty() {
        let owner = holder["owner"].as_str().unwrap().to_owned();
        let via = if releases % 2 == 0 { &gw_a } else { &gw_b };
        assert_eq!(release(via, name, &owner, token(&holder)).await.0, 204);
        releases += 1;
        until_answered(&all, 1).await;
        holder = winner(&mut all).await;
        tokens.push(token(&holder));
    }
    let runs = store.runs() - before;
    eprintln!("two instances: {runs} script runs for the next {releases} releases");
    assert!(
        runs <= 3 * releases,
        "{runs} script runs for {releases} releases"
    );
    assert!(tokens.windows(2).all(|t| t[0] < t[1]), "{tokens:?}");
}
