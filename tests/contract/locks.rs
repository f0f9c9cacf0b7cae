//! Lock scenarios (docs/api.md "Distributed locks"): mutual exclusion under 50 concurrent
//! acquirers, fencing tokens that only grow (across release, expiry, a lost counter and a
//! Redis restart), refusals for non-holders, renewal, waking waiters on release, and two
//! gateway instances sharing one store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{
    self, command_calls, script_runs, Backend, Gateway, RedisCluster, RedisProcess,
};

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
    a_hundred_owners_at_once_on_one_lock_one_wins,
    two_hundred_locks_at_once_all_acquired_and_released,
    a_lock_in_the_layout_before_is_held_until_it_expires,
    documented_bounds_are_the_enforced_ones,
    an_unknown_api_key_is_a_documented_401,
    lock_held_says_when_to_retry_in_retry_after,
);

/// An acquisition's and a renewal's bounds (`ttl_ms` 100–3,600,000, `wait_ms` 0–10,000) are
/// the served OpenAPI document's.
async fn documented_bounds_are_the_enforced_ones(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let name = fresh("bounds");
    let path = format!("/v1/locks/{name}");
    let acquisition = (reqwest::Method::POST, path.as_str());
    // Always the same owner: acquiring again extends, so no acquisition waits.
    for (field, bounds) in [
        ("ttl_ms", (100, Some(3_600_000))),
        ("wait_ms", (0, Some(10_000))),
    ] {
        crate::documented_bounds_hold(
            &gw,
            acquisition.clone(),
            "AcquireLock",
            field,
            bounds,
            |v| {
                let mut body = json!({"owner": "o", "ttl_ms": 60_000});
                body[field] = v;
                body
            },
        )
        .await;
    }
    let (status, held) = acquire(&gw, &name, "o", 60_000, 0).await;
    assert_eq!(status, 200, "{held}");
    let token = token(&held);
    let renew = format!("/v1/locks/{name}/renew");
    crate::documented_bounds_hold(
        &gw,
        (reqwest::Method::POST, renew.as_str()),
        "RenewLock",
        "ttl_ms",
        (100, Some(3_600_000)),
        |v| json!({"owner": "o", "token": token, "ttl_ms": v}),
    )
    .await;
}

async fn an_unknown_api_key_is_a_documented_401(backend: Backend) {
    crate::unknown_api_keys_are_a_documented_401(backend, "/v1/locks/").await;
}

/// `409 lock_held` carries `Retry-After` as a 429 does: its `retry_after_ms` in whole seconds,
/// rounded up, at least 1 (docs/api.md "Distributed locks").
async fn lock_held_says_when_to_retry_in_retry_after(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for ttl_ms in [2_500, 300] {
        let name = fresh("retry-after");
        let (status, held) = acquire(&gw, &name, "alice", ttl_ms, 0).await;
        assert_eq!(status, 200, "{held}");
        let refused = gw
            .client
            .post(gw.url(&format!("/v1/locks/{name}")))
            .json(&json!({"owner": "bob", "ttl_ms": 1_000}))
            .send()
            .await
            .unwrap();
        let header = refused.headers().get("retry-after").cloned();
        let status = refused.status().as_u16();
        let body: Value = refused.json().await.unwrap();
        if status == 200 && ttl_ms < 1_000 {
            // The short lease ran out before the second request (a Redis clock runs on).
            continue;
        }
        let wait_ms = held_for(status, &body);
        let header = header.unwrap_or_else(|| panic!("Retry-After with {body}"));
        let seconds: u64 = header.to_str().unwrap().parse().unwrap();
        assert_eq!(seconds, wait_ms.div_ceil(1000).max(1), "{body}");
    }
}

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

/// The ms a `409 lock_held` refusal tells the caller to wait; fails on any other answer.
fn held_for(status: u16, body: &Value) -> u64 {
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("lock_held")),
        "{body}"
    );
    body["retry_after_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("retry_after_ms in {body}"))
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
            // A hold with a length, for overlaps to show: the holder asks who holds it.
            let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
            assert_eq!(
                state["owner"],
                owner.as_str(),
                "held by its holder: {state}"
            );
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
    // Released, the lock's key keeps its last token (the fencing counter) for the grace past
    // the lease; even with it gone (as after its expiry), tokens keep growing.
    let key = format!("{prefix}lk:{{{name}}}");
    if let Some(ttl) = redis_cli(backend, &["pttl", &key]) {
        let ttl: u64 = ttl.parse().unwrap();
        assert!(
            ttl > redis_gateway::locks::logic::FENCE_GRACE_MS,
            "the counter outlives the lease by the grace: {ttl}"
        );
        let kept = redis_cli(backend, &["get", &key]).unwrap();
        assert_eq!(kept, format!("0 {t2}"), "released, the token stays");
        let (_, c) = acquire(&gw, &name, "carol", 60_000, 0).await;
        assert!(token(&c) > t2, "{t2} then {c}");
        assert_eq!(release(&gw, &name, "carol", token(&c)).await.0, 204);
        redis_cli(backend, &["del", &key]);
    }
    let (_, d) = acquire(&gw, &name, "dave", 60_000, 0).await;
    assert!(token(&d) > t2, "{t2} then {d}");
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
    let retry = held_for(status, &body);
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
    gw.until_sleeping(1).await;
    assert_eq!(release(&gw, &name, "alice", token(&a)).await.0, 204);
    let (status, b) = waiter.await.unwrap();
    assert_eq!(status, 200, "the waiter got the lock: {b}");
    assert!(token(&b) > token(&a));
    assert_eq!(b["owner"], "bob");
    if backend == Backend::Redis {
        // Nobody waits any more: the gateway drops its subscription to the lock's channel.
        let channel = format!("{prefix}lk:{{{name}}}:released");
        let unsubscribed = format!("nobody subscribes to {channel}");
        crate::common::poll::eventually_holds(Duration::from_secs(10), &unsubscribed, || {
            redis_cli(backend, &["pubsub", "shardnumsub", &channel])
                .unwrap()
                .ends_with("\n0")
        })
        .await;
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
    held_for(status, &body);
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
    gw2.until_sleeping(1).await;
    assert_eq!(release(&gw1, &name, "alice", token(&a)).await.0, 204);
    let (status, b) = waiter.await.unwrap();
    assert_eq!(status, 200, "{b}");
    assert!(token(&b) > token(&a));
    assert_eq!(release(&gw1, &name, "bob", token(&b)).await.0, 204);
}

/// A lock written by a gateway still on the key layout before (`"owner\ntoken"`, expiring
/// with the lease: a rolling upgrade, docs/locks.md "Key layout") is held by its owner until
/// its key expires: another owner is refused and told for how long, inspecting shows it, its
/// owner renews, extends (keeping its token) and releases it, and once it expires a waiting
/// acquisition takes it.
async fn a_lock_in_the_layout_before_is_held_until_it_expires(backend: Backend) {
    if backend == Backend::Memory {
        return; // a layout of Redis keys
    }
    let settings = common::settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let old = |name: &str, owner: &str, token: u64, ttl_ms: u64| {
        let key = format!("{prefix}lk:{{{name}}}");
        let value = format!("{owner}\n{token}");
        redis_cli(backend, &["set", &key, &value, "px", &ttl_ms.to_string()]);
    };
    let t = 1_700_000_000_000_000;
    let name = fresh("old");
    old(&name, "alice", t, 60_000);
    let (status, body) = acquire(&gw, &name, "bob", 1_000, 0).await;
    let retry = held_for(status, &body);
    assert!(50_000 < retry && retry <= 60_000, "{body}");
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(
        (&state["held"], &state["owner"]),
        (&json!(true), &json!("alice")),
        "{state}"
    );
    let (status, r) = gw
        .post(
            &format!("/v1/locks/{name}/renew"),
            json!({"owner": "alice", "token": t, "ttl_ms": 120_000}),
        )
        .await;
    assert_eq!((status.as_u16(), token(&r)), (200, t), "{r}");
    let (status, body) = acquire(&gw, &name, "bob", 1_000, 0).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["retry_after_ms"].as_u64().unwrap() > 60_000, "{body}");
    let (status, again) = acquire(&gw, &name, "alice", 60_000, 0).await;
    assert_eq!((status, token(&again)), (200, t), "{again}");
    assert_eq!(release(&gw, &name, "alice", t).await.0, 204);
    let (status, b) = acquire(&gw, &name, "bob", 60_000, 0).await;
    assert_eq!(status, 200, "{b}");
    assert!(token(&b) > t, "{b}");

    // Released as it is, by its owner: free.
    let name = fresh("old");
    old(&name, "alice", t, 60_000);
    assert_eq!(release(&gw, &name, "bob", t).await.0, 409);
    assert_eq!(release(&gw, &name, "alice", t).await.0, 204);
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(state, json!({"name": name, "held": false}));

    // Left to expire: an acquisition waiting for it gets it then.
    let name = fresh("old");
    old(&name, "alice", t, 300);
    let (status, b) = acquire(&gw, &name, "bob", 60_000, 10_000).await;
    assert_eq!(status, 200, "{b}");
    assert!(token(&b) > t, "{b}");
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
    let state = crate::common::poll::until(Duration::from_secs(10), || async {
        let (status, body) = gw.get("/v1/locks/persisted").await;
        (status == 200).then_some(body)
    })
    .await
    .unwrap_or_default();
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
    let back = "locks work again once Redis is back";
    crate::common::poll::eventually(Duration::from_secs(10), back, || async {
        (acquire(&gw, "down", "carol", 60_000, 0).await.0 == 200).then_some(())
    })
    .await;
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
    gw.until_sleeping(cap).await;
    assert!(waiting.iter().all(|w| !w.is_finished()), "they wait");
    let (status, body) = acquire(&gw, &name, "late", 60_000, 10_000).await;
    assert!(held_for(status, &body) > 60_000, "{body}");
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
    let served = "a waiting acquisition gets the lock";
    let served = crate::common::poll::eventually(Duration::from_secs(10), served, || {
        let finished = waiting.iter().position(|w| w.is_finished());
        async move { finished }
    })
    .await;
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
            Backend::Memory => unreachable!("counts the store's commands"),
        }
    }

    /// Acquisition attempts that found a lock held, on every node: each reads the lock's key
    /// (a keyspace hit) and writes nothing (`lock_acquire.lua`), while every other step these
    /// tests make once the lock's key exists reads it once and writes it once (an acquisition
    /// that takes it, a release by its holder), so they are the keyspace hits less the `SET`s.
    /// Not the `GET`s: each gateway also polls a limiter key that does not exist here (a miss).
    /// Counted rather than script runs because the attempts a worker makes in one turn share
    /// a run.
    fn refused(&self) -> i64 {
        let refused = |r: &RedisProcess| {
            let stats = r.cli(&["info", "stats"]).expect("redis-cli answers");
            let hits: i64 = stats
                .lines()
                .find_map(|l| l.strip_prefix("keyspace_hits:"))
                .and_then(|n| n.trim().parse().ok())
                .expect("keyspace_hits");
            hits - command_calls(r, "set") as i64
        };
        match self {
            Self::Redis(r) => refused(r),
            Self::Cluster(c) => c.nodes.iter().map(refused).sum(),
        }
    }

    async fn until_refused(&self, n: i64) {
        let tried = "the acquisitions tried";
        crate::common::poll::eventually_holds(Duration::from_secs(20), tried, || {
            self.refused() >= n
        })
        .await;
    }

    /// Settings for gateways on this store; instances made from one value share its keys.
    fn settings(&self) -> redis_gateway::settings::Settings {
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
/// its refused attempts before sleeping (one, then one more once it listens for releases).
async fn waiting_acquisitions(
    store: &Private,
    gw: &Arc<Gateway>,
    name: &str,
    prefix: &str,
    n: usize,
) -> Vec<Waiting> {
    let (before, asleep) = (store.refused(), gw.sleeping());
    let waiting = (0..n)
        .map(|i| {
            let (gw, name, owner) = (gw.clone(), name.to_owned(), format!("{prefix}{i}"));
            tokio::spawn(async move { acquire(&gw, &name, &owner, 600_000, 10_000).await })
        })
        .collect();
    store.until_refused(before + 2 * n as i64).await;
    gw.until_sleeping(asleep + n).await;
    waiting
}

fn answered(waiting: &[Waiting]) -> usize {
    waiting.iter().filter(|w| w.is_finished()).count()
}

async fn until_answered(waiting: &[Waiting], n: usize) {
    let what = "acquisitions answered";
    crate::common::poll::eventually_holds(Duration::from_secs(10), what, || answered(waiting) >= n)
        .await;
}

/// The holder among the answered acquisitions (taken out of `waiting`).
async fn winner(waiting: &mut Vec<Waiting>) -> Value {
    let at = waiting.iter().position(|w| w.is_finished()).unwrap();
    let (status, body) = waiting.remove(at).await.unwrap();
    assert_eq!(status, 200, "answered without the lock: {body}");
    body
}

/// With 30 acquisitions waiting, one release costs the store a bounded number of attempts
/// (the winner's, and at most one more), not one per waiter: exactly one waiter gets the lock,
/// the others keep waiting and get it in turn as each holder releases.
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
    let before = store.refused();
    assert_eq!(release(&gw, name, "alice", token(&a)).await.0, 204);
    until_answered(&waiting, 1).await;
    // Real time: any other acquisition woken tries within it; the test counts those tries after.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = store.refused() - before;
    assert_eq!(answered(&waiting), 1, "one acquisition answered");
    let mut holder = winner(&mut waiting).await;
    let mut tokens = vec![token(&a), token(&holder)];
    // The others, still waiting, get it in turn.
    let before = store.refused();
    while !waiting.is_empty() {
        let owner = holder["owner"].as_str().unwrap().to_owned();
        assert_eq!(release(&gw, name, &owner, token(&holder)).await.0, 204);
        until_answered(&waiting, 1).await;
        holder = winner(&mut waiting).await;
        tokens.push(token(&holder));
    }
    let rest = store.refused() - before;
    eprintln!(
        "{backend:?}, {WAITERS} acquisitions waiting: {first} refused attempts after the first release, \
         {rest} after the next {}",
        WAITERS - 1
    );
    assert!(first <= 1, "{first} refused attempts after one release");
    assert!(
        rest < WAITERS as i64,
        "{rest} refused attempts after {} releases",
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
    let before = store.refused();
    assert_eq!(release(&gw_b, name, "alice", token(&a)).await.0, 204);
    let mut all: Vec<Waiting> = on_a.into_iter().chain(on_b).collect();
    until_answered(&all, 1).await;
    // Real time: any other acquisition woken tries within it; the test counts those tries after.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = store.refused() - before;
    eprintln!("two instances, 10 acquisitions waiting on each: {refused} refused attempts after one release");
    // One attempt per instance: one wins.
    assert!(refused <= 1, "{refused} refused attempts");
    assert_eq!(answered(&all), 1);
    let mut holder = winner(&mut all).await;
    let mut tokens = vec![token(&a), token(&holder)];
    // Released through either instance in turn, the lock reaches every waiter of both.
    let before = store.refused();
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
    let refused = store.refused() - before;
    eprintln!("two instances: {refused} refused attempts after the next {releases} releases");
    assert!(
        refused <= releases,
        "{refused} refused attempts after {releases} releases"
    );
    assert!(tokens.windows(2).all(|t| t[0] < t[1]), "{tokens:?}");
}

/// 100 owners acquiring one lock at once (on Redis, many of them in one script run):
/// exactly one gets it, with a token above any the lock handed out before; every other is
/// refused as held, told for how long the winner's lease still runs.
async fn a_hundred_owners_at_once_on_one_lock_one_wins(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let name = fresh("hundred");
    let (_, earlier) = acquire(&gw, &name, "first", 60_000, 0).await;
    let earlier = token(&earlier);
    assert_eq!(release(&gw, &name, "first", earlier).await.0, 204);
    let replies = futures::future::join_all((0..100).map(|i| {
        let (gw, name) = (gw.clone(), name.clone());
        async move { acquire(&gw, &name, &format!("o{i}"), 60_000, 0).await }
    }))
    .await;
    let won: Vec<&Value> = replies
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(won.len(), 1, "one winner: {won:?}");
    assert!(token(won[0]) > earlier, "{earlier} then {}", won[0]);
    for (status, body) in replies.iter().filter(|(s, _)| *s != 200) {
        let retry = held_for(*status, body);
        assert!(0 < retry && retry <= 60_000, "{body}");
    }
    let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
    assert_eq!(state["owner"], won[0]["owner"], "{state}");
}

/// 200 different locks acquired at once (on a single Redis, in shared script runs; on a
/// Cluster, per slot) are all acquired, each with its own valid token; released at once, every
/// release succeeds and every lock is free again.
async fn two_hundred_locks_at_once_all_acquired_and_released(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let names: Vec<String> = (0..200).map(|_| fresh("many")).collect();
    let acquired = futures::future::join_all(names.iter().map(|name| {
        let gw = gw.clone();
        async move { acquire(&gw, name, "owner", 60_000, 0).await }
    }))
    .await;
    let mut tokens = Vec::new();
    for (name, (status, body)) in names.iter().zip(&acquired) {
        assert_eq!(status, &200, "{name}: {body}");
        assert_eq!(
            (&body["name"], &body["owner"]),
            (&json!(name), &json!("owner"))
        );
        tokens.push(token(body));
    }
    // Each answer is its own lock's: renewing with it is accepted by that lock alone.
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{}/renew", names[7]),
            json!({"owner": "owner", "token": tokens[7], "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let released = futures::future::join_all(names.iter().zip(&tokens).map(|(name, t)| {
        let gw = gw.clone();
        async move { release(&gw, name, "owner", *t).await }
    }))
    .await;
    for (name, (status, body)) in names.iter().zip(&released) {
        assert_eq!(*status, 204, "{name}: {body}");
    }
    for name in &names {
        let (_, state) = gw.get(&format!("/v1/locks/{name}")).await;
        assert_eq!(state, json!({"name": name, "held": false}));
    }
    // Released twice: refused, the lock being gone.
    assert_eq!(release(&gw, &names[0], "owner", tokens[0]).await.0, 409);
}

/// The grouping the concurrency tests above rely on does happen on a single Redis: 200
/// acquisitions of 200 different locks at once, then their 200 releases, take fewer script runs
/// than requests (a private Redis, so its command counts are this test's). On one thread, as
/// the binary's workers run (`src/workers.rs`).
#[tokio::test]
async fn acquisitions_and_releases_of_many_locks_share_script_runs() {
    let (redis, gw, _) = common::on_private_redis().await;
    let names: Vec<String> = (0..200).map(|i| format!("shared-{i}")).collect();
    let before = script_runs(&redis);
    let acquired = futures::future::join_all(
        names
            .iter()
            .map(|name| acquire(&gw, name, "owner", 60_000, 0)),
    )
    .await;
    let runs = script_runs(&redis) - before;
    assert!(acquired.iter().all(|(s, _)| *s == 200), "{acquired:?}");
    assert!(runs < 200, "{runs} script runs for 200 acquisitions");
    let before = script_runs(&redis);
    let released = futures::future::join_all(
        names
            .iter()
            .zip(&acquired)
            .map(|(name, (_, body))| release(&gw, name, "owner", token(body))),
    )
    .await;
    let runs = script_runs(&redis) - before;
    assert!(released.iter().all(|(s, _)| *s == 204), "{released:?}");
    assert!(runs < 200, "{runs} script runs for 200 releases");
}

/// `lock_acquire.lua` and `lock_release.lua` answering several requests in one run
/// answer each as if it ran alone, in order: on one name the first free acquisition takes it,
/// another owner then finds it held (told the lease's time left), the same owner again extends
/// it with the same token; other names in the same run are acquired each with its own token,
/// which follows the name's last token (kept in its key past the lease) or the clock, whichever
/// is ahead; a key in the layout before (`"owner\ntoken"`) is held by its owner until it
/// expires. A release in a run frees its lock, keeping the token, and announces it on its own
/// channel. Called directly on a private Redis so each run's make-up is the test's.
#[tokio::test]
async fn one_lock_script_run_answers_each_request_in_order() {
    use fred::prelude::*;
    const GRACE: i64 = 3_600_000;
    let (redis, client, acquire_sha) =
        common::fred_on_private_redis(include_str!("../../src/locks/redis/lock_acquire.lua")).await;
    let release_sha: String = client
        .script_load(include_str!("../../src/locks/redis/lock_release.lua"))
        .await
        .unwrap();
    // b released with a low token, d with one ahead of the clock, g's lease over (its key
    // kept for the counter), e held by frank in the layout before.
    let ahead: u64 = 5_000_000_000_000_000;
    redis.cli(&["SET", "lk:{b}", "0 5 "]).unwrap();
    redis
        .cli(&["SET", "lk:{d}", &format!("0 {ahead} ")])
        .unwrap();
    redis.cli(&["SET", "lk:{g}", "1000 77 gina"]).unwrap();
    redis
        .cli(&["SET", "lk:{e}", "frank\n42", "PX", "20000"])
        .unwrap();
    #[derive(Debug, PartialEq)]
    enum Reply {
        Token(u64),
        Left(i64),
    }
    use Reply::{Left, Token};
    let acquire = |calls: &[(&str, &str, u64)]| {
        let mut keys = Vec::new();
        let mut args = vec![GRACE.to_string()];
        for (name, owner, ttl) in calls {
            keys.push(format!("lk:{{{name}}}"));
            args.extend([owner.to_string(), ttl.to_string()]);
        }
        let (client, sha) = (client.clone(), acquire_sha.clone());
        async move {
            let reply: Vec<Value> = client.evalsha(sha, keys, args).await.unwrap();
            let Value::Integer(now_ms) = reply[0] else {
                panic!("{reply:?}")
            };
            let replies: Vec<Reply> = reply[1..]
                .iter()
                .map(|r| match r {
                    Value::Integer(left) => Left(*left),
                    token => Token(token.as_string().unwrap().parse().unwrap()),
                })
                .collect();
            (now_ms, replies)
        }
    };
    let (now, replies) = acquire(&[
        ("a", "alice", 60_000),
        ("a", "bob", 1_000),
        ("b", "bob", 30_000),
        ("a", "alice", 90_000),
        ("c", "carol", 1_000),
        ("a", "bob", 1_000),
        ("b", "alice", 1_000),
        ("d", "dave", 1_000),
        ("g", "gina", 1_000),
        ("e", "erin", 1_000),
        ("e", "frank", 50_000),
        ("e", "erin", 1_000),
    ])
    .await;
    assert!(now > 1_700_000_000_000, "{now}");
    assert_eq!(replies.len(), 12, "{replies:?}");
    let Token(a) = replies[0] else {
        panic!("{replies:?}")
    };
    // One clock read per run: fresh tokens are that µs time (past b's last token, 5, and
    // past g's: its lease was over, so gina gets a new one), leases end from that ms.
    assert!(a / 1_000 == now as u64, "{a} at {now}");
    let Left(left_then) = replies[9] else {
        panic!("{replies:?}")
    };
    assert!(0 < left_then && left_then <= 20_000, "{replies:?}");
    assert_eq!(
        replies,
        [
            Token(a),
            Left(60_000),
            Token(a),
            Token(a), // alice again: extended with the same token, to the new lease
            Token(a),
            Left(90_000),
            Left(30_000),
            Token(ahead + 1), // the counter ahead of the clock: one past it
            Token(a),
            Left(left_then), // frank holds it, in the layout before, until its key expires
            Token(42),       // frank extends it: the same token, now in this layout
            Left(50_000),
        ]
    );
    let held = |key: &str| redis.cli(&["GET", key]).unwrap().trim().to_owned();
    let pttl = |key: &str| -> i64 { redis.cli(&["PTTL", key]).unwrap().trim().parse().unwrap() };
    assert_eq!(held("lk:{a}"), format!("{} {a} alice", now + 90_000));
    assert_eq!(held("lk:{b}"), format!("{} {a} bob", now + 30_000));
    assert_eq!(
        held("lk:{d}"),
        format!("{} {} dave", now + 1_000, ahead + 1)
    );
    assert_eq!(held("lk:{e}"), format!("{} 42 frank", now + 50_000));
    // The key, and so the token, outlives the lease by the grace.
    for (key, ttl) in [("lk:{a}", 90_000), ("lk:{e}", 50_000)] {
        let left = pttl(key);
        assert!(
            ttl + GRACE - 5_000 < left && left <= ttl + GRACE,
            "{key}: {left}"
        );
    }

    // Releases in one run, in order: a wrong token is refused, the holder's frees the lock
    // (keeping its token and expiry), a second release of it is refused; a lock in the layout
    // before is deleted; each release announces on its own lock's channel.
    redis
        .cli(&["SET", "lk:{f}", "frank\n7", "PX", "60000"])
        .unwrap();
    let subscriber = Builder::from_config(Config::from_url(&redis.url()).unwrap())
        .build()
        .unwrap();
    subscriber.init().await.unwrap();
    let mut messages = subscriber.message_rx();
    subscriber
        .ssubscribe(vec![
            "lk:{a}:released",
            "lk:{b}:released",
            "lk:{c}:released",
            "lk:{f}:released",
        ])
        .await
        .unwrap();
    let release = |calls: &[(&str, &str, u64)]| {
        let mut keys = Vec::new();
        let mut args = vec!["origin-1".to_owned()];
        for (name, owner, token) in calls {
            keys.push(format!("lk:{{{name}}}"));
            args.extend([
                owner.to_string(),
                token.to_string(),
                format!("lk:{{{name}}}:released"),
            ]);
        }
        let (client, sha) = (client.clone(), release_sha.clone());
        async move {
            let reply: Vec<i64> = client.evalsha(sha, keys, args).await.unwrap();
            reply
        }
    };
    let before = pttl("lk:{a}");
    let released = release(&[
        ("a", "alice", a + 1),
        ("a", "alice", a),
        ("b", "bob", a),
        ("a", "alice", a),
        ("c", "bob", a),
        ("f", "frank", 8),
        ("f", "frank", 7),
    ])
    .await;
    assert_eq!(released, [0, 1, 1, 0, 0, 0, 1]);
    assert_eq!(held("lk:{a}"), format!("0 {a}"));
    assert!(pttl("lk:{a}") > before - 5_000, "the expiry stays");
    assert_eq!(held("lk:{b}"), format!("0 {a}"));
    assert_eq!(held("lk:{c}"), format!("{} {a} carol", now + 1_000));
    assert_eq!(held("lk:{f}"), "");
    let mut heard = Vec::new();
    for _ in 0..3 {
        let m = tokio::time::timeout(std::time::Duration::from_secs(5), messages.recv())
            .await
            .expect("an announcement")
            .unwrap();
        heard.push((m.channel.to_string(), m.value.as_string().unwrap()));
    }
    heard.sort();
    assert_eq!(
        heard,
        [
            ("lk:{a}:released".to_owned(), "origin-1".to_owned()),
            ("lk:{b}:released".to_owned(), "origin-1".to_owned()),
            ("lk:{f}:released".to_owned(), "origin-1".to_owned()),
        ]
    );
    assert_eq!(command_calls(&redis, "spublish"), 3, "one per release");
    // Free again: the next acquisition gets a new token, past the one kept.
    let (_, replies) = acquire(&[("a", "bob", 1_000)]).await;
    assert!(matches!(replies[..], [Token(t)] if t > a), "{replies:?}");
}
