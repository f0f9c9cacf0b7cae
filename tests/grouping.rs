//! Grouping on Redis that no contract test pins, each on private servers so their command
//! counts are the test's own:
//!
//! - on a Cluster, lock acquisitions whose names share a hash slot go to Redis together, as one
//!   `lock_acquire.lua` run for many, and so do their renewals (`lock_renew.lua`), a wrong
//!   token among them refused alone (docs/locks.md, grouping on Redis); acquisitions of locks
//!   on every master are each answered with their own lock;
//! - with two gateway instances on one Redis, an enqueue through one wakes a claim waiting on
//!   the other (its announcement), and a burst of enqueues into one queue is announced once per
//!   `queue_enqueue.lua` run, not once per job (docs/queues.md, long poll and grouping on Redis).
//!
//! On one thread, as the binary's workers run (`src/workers.rs`): requests sent together reach
//! the gateway in one turn of its event loop, which is what a group is.

mod common;

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use redis_gateway::config::StoreChoice;
use redis_gateway::settings::Settings;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use common::{
    claim, command_calls, enqueue, script_runs, Backend, Gateway, RedisCluster, RedisProcess,
};

/// Settings for gateways on `url`; instances made from one value share its keys.
fn on(url: String) -> Settings {
    let mut s = common::settings(Backend::Memory);
    s.store = StoreChoice::Redis(url);
    // Above the 20 s long polls below.
    s.request_timeout = Duration::from_secs(40);
    s
}

/// The hash slot of a lock named `name`: its key is `lk:{name}` after the prefix
/// (docs/locks.md "Key layout"), so the slot is the name's.
fn slot(name: &str) -> u16 {
    fred::util::redis_keyslot(name.as_bytes())
}

async fn acquire(gw: &Gateway, name: &str, owner: String) -> (u16, Value) {
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{name}"),
            json!({"owner": owner, "ttl_ms": 60_000}),
        )
        .await;
    (status.as_u16(), body)
}

/// Each of `acquired` (of `names[i]` by `owner(i)`) is `200` with its own lock: its name and
/// owner, and a token that lock alone takes (a renewal with it is accepted; answers mixed up
/// within a script run would give a lock another's owner, or a token it refuses).
async fn each_its_own(gw: &Gateway, names: &[String], acquired: &[(u16, Value)]) {
    let renewed = join_all(names.iter().zip(acquired).enumerate().map(
        |(i, (name, (status, body)))| async move {
            assert_eq!(*status, 200, "{name}: {body}");
            assert_eq!(
                (&body["name"], &body["owner"]),
                (&json!(name), &json!(owner(i))),
                "{body}"
            );
            let token = body["token"].as_u64().expect("a token");
            gw.post(
                &format!("/v1/locks/{name}/renew"),
                json!({"owner": owner(i), "token": token, "ttl_ms": 60_000}),
            )
            .await
        },
    ))
    .await;
    for (name, (status, body)) in names.iter().zip(&renewed) {
        assert_eq!(*status, 200, "{name} renewed with its own token: {body}");
    }
}

fn owner(i: usize) -> String {
    format!("owner-{i}")
}

/// Acquires every lock of `names` at once, the i-th for [`owner`]`(i)`.
async fn acquire_all(gw: &Gateway, names: &[String]) -> Vec<(u16, Value)> {
    join_all(
        names
            .iter()
            .enumerate()
            .map(|(i, name)| acquire(gw, name, owner(i))),
    )
    .await
}

/// 100 acquisitions of 100 different locks whose keys share one hash slot, sent at once, take
/// fewer `lock_acquire.lua` runs than acquisitions (one per group, at most 64 each), and each
/// is answered with its own lock; their renewals, sent at once, likewise; 150 acquisitions of locks spread over the three masters are
/// all answered with their own, too.
#[tokio::test]
async fn acquisitions_in_one_cluster_slot_share_script_runs() {
    const N: usize = 100;
    let cluster = RedisCluster::start();
    let gw = Gateway::with_settings(on(cluster.url())).await;

    // Names in the slot of "slot-0", found by CRC16 (about one in 16,384).
    let target = slot("slot-0");
    let mut in_slot = (0..)
        .map(|i| format!("slot-{i}"))
        .filter(|name| slot(name) == target);
    // Loads the script on the slot's master, so that each run below is one run.
    let first = in_slot.next().unwrap();
    let (status, warm) = acquire(&gw, &first, "warm-up".into()).await;
    assert_eq!(status, 200, "{warm}");
    let (status, body) = gw
        .post(
            &format!("/v1/locks/{first}/renew"),
            json!({"owner": "warm-up", "token": warm["token"], "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<String> = in_slot.take(N).collect();

    let before = script_runs_all(&cluster);
    let acquired = acquire_all(&gw, &names).await;
    let runs = script_runs_all(&cluster) - before;
    eprintln!("{runs} lock_acquire.lua runs for {N} acquisitions in one slot");
    let before = script_runs_all(&cluster);
    each_its_own(&gw, &names, &acquired).await;
    let renew_runs = script_runs_all(&cluster) - before;
    eprintln!("{renew_runs} lock_renew.lua runs for {N} renewals in one slot");
    assert!(
        renew_runs < N as u64,
        "{renew_runs} lock_renew.lua runs for {N} renewals in one slot"
    );
    // Renewals sent together, every tenth with a token one off: those alone are refused.
    let renewed = join_all(acquired.iter().enumerate().map(|(i, (_, body))| {
        let token = body["token"].as_u64().expect("a token") + u64::from(i % 10 == 0);
        let path = format!("/v1/locks/{}/renew", names[i]);
        let gw = &gw;
        async move {
            gw.post(
                &path,
                json!({"owner": owner(i), "token": token, "ttl_ms": 60_000}),
            )
            .await
        }
    }))
    .await;
    for (i, (status, body)) in renewed.iter().enumerate() {
        let want = if i % 10 == 0 { 409 } else { 200 };
        assert_eq!(status.as_u16(), want, "{}: {body}", names[i]);
    }
    // The keys are where the test computed: every lock in the one slot.
    let in_target: u64 = cluster
        .nodes
        .iter()
        .map(|n| {
            let count = n
                .cli(&["cluster", "countkeysinslot", &target.to_string()])
                .expect("redis-cli answers");
            count.trim().parse::<u64>().expect("a count")
        })
        .sum();
    assert_eq!(
        in_target,
        N as u64 + 1,
        "the locks' keys share slot {target}"
    );
    assert!(
        runs < N as u64,
        "{runs} lock_acquire.lua runs for {N} acquisitions in one slot"
    );

    // Spread over the slots of every master: each answered with its own lock too.
    let names: Vec<String> = (0..150).map(|i| format!("spread-{i}")).collect();
    let acquired = acquire_all(&gw, &names).await;
    each_its_own(&gw, &names, &acquired).await;
    for node in &cluster.nodes {
        let keys = node
            .cli(&["--scan", "--pattern", "*lk:{spread-*"])
            .expect("redis-cli answers");
        assert!(
            keys.lines().count() > 0,
            "no spread lock on the master on port {}",
            node.port
        );
    }
}

/// Script runs on every node of `cluster` so far.
fn script_runs_all(cluster: &RedisCluster) -> u64 {
    cluster.nodes.iter().map(script_runs).sum()
}

/// Waits (up to 20 s, or fails) until `done` holds.
async fn until(what: &str, done: impl FnMut() -> bool) {
    common::poll::eventually_holds(Duration::from_secs(20), what, done).await;
}

/// Pattern subscriptions on `redis`: one per gateway instance listening for announcements.
fn pattern_subscriptions(redis: &RedisProcess) -> u64 {
    let n = redis.cli(&["pubsub", "numpat"]).expect("redis-cli answers");
    n.trim().parse().expect("a count")
}

/// Two gateway instances on one private Redis: A and B.
async fn two_instances() -> (RedisProcess, Gateway, Gateway) {
    let redis = RedisProcess::start(&[], false);
    let s = on(redis.url());
    let a = Gateway::with_settings(s.clone()).await;
    let b = Gateway::with_settings(s).await;
    (redis, a, b)
}

/// Readies `queue` on instances A and B for counting (its scripts loaded: each run below is
/// one run) and starts a claim on B waiting `wait_ms` on `on`; returns once B's subscriber,
/// started by that claim, listens and the look it makes then (for announcements it may have
/// missed) is over. B and the waiting claim.
async fn listening(
    redis: &RedisProcess,
    a: &Gateway,
    b: Gateway,
    queue: &str,
    on: &'static str,
    wait_ms: u64,
) -> (Arc<Gateway>, JoinHandle<Vec<Value>>) {
    enqueue(a, queue, json!({"payload": 0})).await;
    assert_eq!(claim(&b, queue, json!({})).await.len(), 1);
    let b = Arc::new(b);
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move { claim(&b, on, json!({"wait_ms": wait_ms})).await })
    };
    until("B listens for announcements", || {
        pattern_subscriptions(redis) == 1
    })
    .await;
    // Real time: for that look, which leaves no trace to wait on, to be over.
    tokio::time::sleep(Duration::from_millis(300)).await;
    (b, waiting)
}

/// A claim waiting 20 s on instance B is answered with the job an enqueue through instance A
/// made, woken by A's announcement: before a claim B started earlier with a 4 s wait answers
/// empty. Without the announcement the claim would find the job only at its room's 5 s
/// re-check (`RECHECK` in src/queues/redis/announce.rs) or the end of its wait, both after that.
#[tokio::test]
async fn an_enqueue_on_one_instance_wakes_a_claim_waiting_on_another() {
    let (redis, a, b) = two_instances().await;
    let (gw_b, limit) = listening(&redis, &a, b, "woken", "limit", 4000).await;
    let before = script_runs(&redis);
    let mut waiting = {
        let b = gw_b.clone();
        tokio::spawn(async move { claim(&b, "woken", json!({"wait_ms": 20000})).await })
    };
    until("the claim on B looked and found nothing", || {
        script_runs(&redis) > before
    })
    .await;

    let job = enqueue(&a, "woken", json!({"id": "x", "payload": 1})).await;
    tokio::select! {
        jobs = &mut waiting => {
            let jobs = jobs.unwrap();
            assert_eq!(jobs.len(), 1, "the claim on B got the job: {jobs:?}");
            assert_eq!(jobs[0]["id"], job["id"]);
        }
        jobs = limit => panic!(
            "the 4 s claim answered ({:?}) before the claim A's enqueue should have woken",
            jobs.unwrap()
        ),
    }
}

/// 100 enqueues into one queue through A at once are announced (`PUBLISH`) at most once per
/// `queue_enqueue.lua` run, fewer times than jobs; B, listening with a claim waiting on that
/// queue, is woken by them and gets one of the jobs.
#[tokio::test]
async fn a_burst_of_enqueues_is_announced_once_per_script_run() {
    const N: usize = 100;
    let (redis, a, b) = two_instances().await;
    let (_b, waiting) = listening(&redis, &a, b, "burst", "burst", 20000).await;

    let (runs, publishes) = (script_runs(&redis), command_calls(&redis, "publish"));
    let enqueued = join_all((0..N).map(|i| enqueue(&a, "burst", json!({"payload": i})))).await;
    let runs = script_runs(&redis) - runs;
    let publishes = command_calls(&redis, "publish") - publishes;
    eprintln!("{N} enqueues: {runs} script runs, {publishes} announcements");
    assert!(publishes >= 1, "the burst was announced");
    assert!(
        publishes <= runs,
        "{publishes} announcements for {runs} script runs: one per run at most"
    );
    assert!(
        publishes < N as u64,
        "{publishes} announcements for {N} enqueues into one queue"
    );

    let jobs = waiting.await.unwrap();
    assert_eq!(jobs.len(), 1, "the claim on B got a job: {jobs:?}");
    assert!(
        enqueued.iter().any(|e| e["id"] == jobs[0]["id"]),
        "{jobs:?}"
    );
}
