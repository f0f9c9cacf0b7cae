//! Acknowledged means durable (`GATEWAY_WRITE_REPLICAS`, docs/operations.md
//! "Durable writes"): with N=1 a purchase, a lock acquisition or an enqueue is answered with
//! success only once a replica holds it, so a failover right after cannot lose it; with N=0
//! the same failover loses acknowledged writes (the test shows it does, so it can fail).
//!
//! A real Cluster of 3 masters + 3 replicas per scenario: one master's replica is paused
//! (`SIGSTOP`), 40 MB of writes fill the replication link (so the writes after them sit in the
//! dead master's memory, not in a socket buffer the replica still reads), the master is killed,
//! the replica resumed and promoted (`CLUSTER FAILOVER TAKEOVER`).

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::poll::{eventually, eventually_holds, until_blocking, until_every};
use common::{Backend, FailoverCluster, Gateway, RedisProcess};
use redis_gateway::config::{StoreChoice, WriteReplicas};
use serde_json::{json, Value};

/// Between two retries of a write the store refused: each one is a request, so not faster
/// than a client backing off would send them.
const RETRY: Duration = Duration::from_millis(100);

/// Writes of each kind made while the replica is paused.
const PAUSED: usize = 4;
/// The replica wait of the N=1 gateway.
const WAIT: Duration = Duration::from_millis(300);

fn signal(sig: &str, pid: &str) {
    assert!(std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .unwrap()
        .success());
}

fn at(minutes: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::minutes(minutes)).to_rfc3339()
}

/// A voucher on sale now: stock 1,000, one per user.
async fn open_voucher(gw: &Gateway, name: &str) {
    let (status, body) = gw
        .admin_put(
            &format!("/v1/seckill/vouchers/{name}"),
            json!({"stock": 1000, "begin": at(-1), "end": at(60), "per_user_limit": 1}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

async fn gateway(url: String, replicas: u32) -> (Gateway, String) {
    gateway_waiting(url, replicas, WAIT).await
}

/// [`gateway`], its writes waiting up to `wait` for their replicas.
async fn gateway_waiting(url: String, replicas: u32, wait: Duration) -> (Gateway, String) {
    let mut s = common::settings(Backend::Memory);
    s.store = StoreChoice::Redis(url);
    s.write_replicas = WriteReplicas {
        replicas,
        timeout: wait,
    };
    let prefix = s.key_prefix.clone();
    (Gateway::with_settings(s).await, prefix)
}

/// A plain client on one server (a Cluster node takes commands for its own slots).
async fn direct(port: u16) -> fred::prelude::Client {
    use fred::prelude::*;
    let client =
        Builder::from_config(Config::from_url(&format!("redis://127.0.0.1:{port}")).unwrap())
            .build()
            .unwrap();
    client.init().await.unwrap();
    client
}

/// `count` names `<stem><i>` whose hash tag (as the gateway spells it: `tag(name)`) is served by
/// the master on `port`.
fn names_on(
    cluster: &FailoverCluster,
    port: u16,
    stem: &str,
    count: usize,
    tag: impl Fn(&str) -> String,
) -> Vec<String> {
    let masters = cluster.masters();
    let (_, ranges) = masters.iter().find(|(p, _)| *p == port).unwrap();
    let mut out = Vec::new();
    for i in 0.. {
        let name = format!("{stem}{i}");
        let slot = fred::util::redis_keyslot(tag(&name).as_bytes());
        if ranges.iter().any(|(a, b)| (*a..=*b).contains(&slot)) {
            out.push(name);
            if out.len() == count {
                return out;
            }
        }
    }
    unreachable!()
}

/// The replica of the master on `port`.
fn replica_of(cluster: &FailoverCluster, port: u16) -> &RedisProcess {
    cluster
        .nodes
        .iter()
        .find(|n| {
            n.cli(&["info", "replication"]).is_some_and(|i| {
                i.contains("role:slave") && i.contains(&format!("master_port:{port}\r"))
            })
        })
        .expect("the master has a replica")
}

/// One paused-write attempt: what it was, its idempotency key, status and latency.
struct Attempt {
    kind: &'static str,
    name: String,
    key: String,
    status: u16,
    latency: Duration,
    body: Value,
}

async fn post(gw: &Gateway, path: &str, key: Option<&str>, body: &Value) -> (u16, Value, bool) {
    let mut req = gw.client.post(gw.url(path)).json(body);
    if let Some(key) = key {
        req = req.header("idempotency-key", key);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let retry_after = r.headers().contains_key("retry-after");
    (status, r.json().await.unwrap_or(Value::Null), retry_after)
}

fn purchase_body(user: usize) -> Value {
    json!({"user_id": user})
}
fn lock_body() -> Value {
    json!({"owner": "w1", "ttl_ms": 600_000})
}
fn job_body(id: &str) -> Value {
    json!({"id": id, "payload": {"n": id}, "delay_ms": 3_600_000})
}

/// The scenario with `replicas` = N; returns nothing, asserting as it goes.
async fn failover_after_paused_writes(replicas: u32) {
    let mut cluster = FailoverCluster::start(1000, false);
    let (gw, prefix) = gateway(cluster.url(), replicas).await;
    let voucher = "dv";
    let slot = fred::util::redis_keyslot(voucher.as_bytes());
    let victim = cluster.owner(slot).unwrap();
    // Without a clients file every caller shares one namespace: the name is the tag.
    let scope = |n: &str| n.to_owned();
    let locks = names_on(&cluster, victim, "lock", 2 + PAUSED, scope);
    let queue = names_on(&cluster, victim, "q", 1, scope).remove(0);

    open_voucher(&gw, voucher).await;

    // Before: acknowledged while the replica is healthy.
    let mut before_users = Vec::new();
    let mut before_tokens = Vec::new();
    let mut before_jobs = Vec::new();
    for i in 0..3 {
        let (s, b, _) = post(
            &gw,
            &format!("/v1/seckill/vouchers/{voucher}/orders"),
            Some(&format!("b{i}")),
            &purchase_body(i + 1),
        )
        .await;
        assert_eq!(s, 201, "{b}");
        before_users.push(i + 1);
        let id = format!("before{i}");
        let (s, b, _) = post(
            &gw,
            &format!("/v1/queues/{queue}/jobs"),
            Some(&id),
            &job_body(&id),
        )
        .await;
        assert_eq!(s, 201, "{b}");
        before_jobs.push(id);
    }
    for name in &locks[..2] {
        let (s, b, _) = post(&gw, &format!("/v1/locks/{name}"), None, &lock_body()).await;
        assert_eq!(s, 200, "{b}");
        before_tokens.push(b["token"].as_u64().unwrap());
    }
    // The gateway spells the lock's key as assumed: the names are on the victim.
    let direct_victim = direct(victim).await;
    let exists: i64 = fred::prelude::KeysInterface::exists(
        &direct_victim,
        format!("{prefix}lk:{{{}}}", scope(&locks[0])),
    )
    .await
    .unwrap();
    assert_eq!(exists, 1, "the lock's key is not on the victim");
    // The replica holds everything written so far, whatever the setting (at N=0 nothing waited
    // for it, and a replica behind on a loaded machine lost the voucher itself): the loss the
    // scenario looks at is of the writes made while it is paused.
    let () = fred::prelude::KeysInterface::set(
        &direct_victim,
        format!("{prefix}synced:{{{voucher}}}"),
        1,
        None,
        None,
        false,
    )
    .await
    .unwrap();
    let acked: i64 = fred::prelude::ServerInterface::wait(&direct_victim, 1, 10_000)
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica did not catch up before the pause");
    let (_, ready) = gw.get("/readyz").await;
    let wr = &ready["write_replicas"];
    assert_eq!(wr["required"], replicas, "{ready}");
    let masters = if replicas > 0 { Some(3) } else { None };
    assert_eq!(wr["masters"].as_array().map(Vec::len), masters, "{ready}");

    // Pause the replica and fill the link.
    let replica = replica_of(&cluster, victim);
    let (replica_port, replica_pid) = (replica.port, replica.pid());
    signal("-STOP", &replica_pid);
    let filler = "x".repeat(1 << 20);
    for i in 0..40 {
        let () = fred::prelude::KeysInterface::set(
            &direct_victim,
            format!("fill:{{{voucher}}}:{i}"),
            filler.as_str(),
            None,
            None,
            false,
        )
        .await
        .unwrap();
    }

    // Writes while it is paused.
    let mut attempts = Vec::new();
    for i in 0..PAUSED {
        let user = 100 + i;
        let key = format!("p{i}");
        let started = Instant::now();
        let (status, body, retry_after) = post(
            &gw,
            &format!("/v1/seckill/vouchers/{voucher}/orders"),
            Some(&key),
            &purchase_body(user),
        )
        .await;
        attempts.push(Attempt {
            kind: "purchase",
            name: user.to_string(),
            key,
            status,
            latency: started.elapsed(),
            body,
        });
        if status == 503 {
            assert!(retry_after, "a 503 without Retry-After");
        }
        let name = locks[2 + i].clone();
        let started = Instant::now();
        let (status, body, _) = post(&gw, &format!("/v1/locks/{name}"), None, &lock_body()).await;
        attempts.push(Attempt {
            kind: "lock",
            name,
            key: String::new(),
            status,
            latency: started.elapsed(),
            body,
        });
        let id = format!("paused{i}");
        let started = Instant::now();
        let (status, body, _) = post(
            &gw,
            &format!("/v1/queues/{queue}/jobs"),
            Some(&id),
            &job_body(&id),
        )
        .await;
        attempts.push(Attempt {
            kind: "enqueue",
            name: id.clone(),
            key: id,
            status,
            latency: started.elapsed(),
            body,
        });
    }
    for a in &attempts {
        if replicas > 0 {
            assert_eq!(
                a.status, 503,
                "{} {} answered while its replica is paused: {}",
                a.kind, a.name, a.body
            );
            assert_eq!(a.body["code"], "backend_unavailable");
            assert!(
                a.latency < WAIT + Duration::from_millis(900),
                "{} took {:?}",
                a.kind,
                a.latency
            );
            assert!(
                a.latency >= WAIT,
                "{} answered before the wait timed out: {:?}",
                a.kind,
                a.latency
            );
        } else {
            assert!(
                matches!(a.status, 200 | 201),
                "{} {}: {} {}",
                a.kind,
                a.name,
                a.status,
                a.body
            );
        }
    }
    if replicas > 0 {
        // Operators see it: the master's replica stops acknowledging, /readyz says degraded.
        let degraded = "/readyz says degraded";
        let ready = eventually(Duration::from_secs(8), degraded, || async {
            let (_, ready) = gw.get("/readyz").await;
            (ready["write_replicas"]["degraded"] == true).then_some(ready)
        })
        .await;
        let victim_entry = ready["write_replicas"]["masters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["node"] == format!("127.0.0.1:{victim}"))
            .cloned()
            .unwrap();
        assert_eq!(victim_entry["replicas"], 0, "{ready}");
        let metrics = gw.text("/metrics").await;
        assert!(
            metrics.contains("gateway_replica_waits_total{outcome=\"timed_out\"}"),
            "no timed-out wait counted"
        );
    }

    // Kill the master, resume and promote its replica.
    let victim_pid = cluster.node(victim).pid();
    signal("-9", &victim_pid);
    signal("-CONT", &replica_pid);
    // Asked again at the pace the nodes take it, until they have promoted it.
    let promote = Duration::from_millis(200);
    let promoted = until_every(Duration::from_secs(20), promote, || async {
        let promoted = cluster.node(replica_port);
        let _ = promoted.cli_timed(&["cluster", "failover", "takeover"]);
        let master = promoted
            .cli_timed(&["info", "replication"])
            .is_some_and(|i| i.contains("role:master"));
        (master && cluster.owner(slot) == Some(replica_port)).then_some(())
    })
    .await;
    assert!(promoted.is_some(), "the replica was not promoted");
    // Back to N healthy replicas: the dead master comes back as the new master's replica.
    if replicas > 0 {
        let node = cluster.nodes.iter_mut().find(|n| n.port == victim).unwrap();
        node.restart();
        let promoted = cluster.node(replica_port);
        let rejoined = "the old master rejoins as a replica";
        eventually_holds(Duration::from_secs(20), rejoined, || {
            promoted
                .cli_timed(&["info", "replication"])
                .is_some_and(|i| i.contains("connected_slaves:1") && i.contains("state=online"))
        })
        .await;
    }
    // The gateway finds the new owner.
    let served = "the voucher's slots serve again";
    let voucher_now = eventually(Duration::from_secs(20), served, || async {
        let (status, v) = gw.get(&format!("/v1/seckill/vouchers/{voucher}")).await;
        (status == 200).then_some(v)
    })
    .await;

    // Every write acknowledged before is there.
    let buyers = |orders: &Value| -> BTreeSet<u64> {
        orders["orders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["user_id"].as_u64().unwrap())
            .collect()
    };
    let (_, orders) = gw
        .get(&format!("/v1/seckill/vouchers/{voucher}/orders?limit=1000"))
        .await;
    let have = buyers(&orders);
    for u in &before_users {
        assert!(
            have.contains(&(*u as u64)),
            "order of user {u}, acknowledged before, is gone"
        );
    }
    for name in &locks[..2] {
        let (_, lock) = gw.get(&format!("/v1/locks/{name}")).await;
        assert_eq!(
            lock["held"], true,
            "lock {name}, acquired before, is gone: {lock}"
        );
    }
    let (_, stats) = gw.get(&format!("/v1/queues/{queue}")).await;
    let jobs = stats["delayed"].as_u64().unwrap();

    let paused_orders = attempts
        .iter()
        .filter(|a| a.kind == "purchase" && have.contains(&a.name.parse::<u64>().unwrap()))
        .count();
    let mut paused_locks = 0;
    for a in attempts.iter().filter(|a| a.kind == "lock") {
        let (_, lock) = gw.get(&format!("/v1/locks/{}", a.name)).await;
        paused_locks += usize::from(lock["held"] == true);
    }
    let paused_jobs = jobs as usize - before_jobs.len();
    if replicas == 0 {
        // The loss the setting prevents: writes answered with success, gone.
        assert_eq!(
            (paused_orders, paused_locks, paused_jobs),
            (0, 0, 0),
            "acknowledged writes survived a failover with a paused replica: the scenario \
             proves nothing (voucher: {voucher_now})"
        );
        return;
    }

    // Retrying each 503 with its key leaves exactly one effect each.
    for a in &attempts {
        let (path, key, body) = match a.kind {
            "purchase" => (
                format!("/v1/seckill/vouchers/{voucher}/orders"),
                Some(a.key.as_str()),
                purchase_body(a.name.parse().unwrap()),
            ),
            "lock" => (format!("/v1/locks/{}", a.name), None, lock_body()),
            _ => (
                format!("/v1/queues/{queue}/jobs"),
                Some(a.key.as_str()),
                job_body(&a.key),
            ),
        };
        let retried = until_every(Duration::from_secs(10), RETRY, || async {
            let (status, body, _) = post(&gw, &path, key, &body).await;
            if matches!(status, 200 | 201) {
                return Some(body);
            }
            assert_eq!(status, 503, "{} retry: {body}", a.kind);
            None
        })
        .await;
        let body = retried.unwrap_or_else(|| panic!("{} retry never succeeded", a.kind));
        if a.kind == "lock" {
            let token = body["token"].as_u64().unwrap();
            assert!(
                before_tokens.iter().all(|t| *t < token),
                "a fencing token went back: {token} after {before_tokens:?}"
            );
        }
    }
    let (_, orders) = gw
        .get(&format!("/v1/seckill/vouchers/{voucher}/orders?limit=1000"))
        .await;
    let list = orders["orders"].as_array().unwrap();
    assert_eq!(list.len(), before_users.len() + PAUSED, "{orders}");
    assert_eq!(
        buyers(&orders).len(),
        list.len(),
        "a user bought twice: {orders}"
    );
    let (_, stats) = gw.get(&format!("/v1/queues/{queue}")).await;
    assert_eq!(stats["delayed"], before_jobs.len() + PAUSED, "{stats}");
    for a in attempts.iter().filter(|a| a.kind == "lock") {
        let (_, lock) = gw.get(&format!("/v1/locks/{}", a.name)).await;
        assert_eq!(lock["held"], true, "{lock}");
    }
}

/// A standalone master with one replica of its own (`replicaof`), in sync.
fn master_with_replica() -> (RedisProcess, RedisProcess) {
    let master = RedisProcess::start(&["--repl-diskless-sync-delay", "0"], false);
    let replica = RedisProcess::start(
        &["--replicaof", "127.0.0.1", &master.port.to_string()],
        false,
    );
    let synced = until_blocking(Duration::from_secs(10), || {
        master
            .cli(&["info", "replication"])
            .is_some_and(|i| i.contains("state=online"))
    });
    assert!(synced, "the replica did not sync");
    // Online is not yet acknowledging: wait until a write on one connection is confirmed.
    let acknowledges = until_blocking(Duration::from_secs(10), || replicated(&master));
    assert!(acknowledges, "the replica does not acknowledge");
    (master, replica)
}

/// Whether a write and `WAIT 1` on one `redis-cli` connection see the replica confirm it.
fn replicated(master: &RedisProcess) -> bool {
    use std::io::Write;
    let mut cli = std::process::Command::new("redis-cli")
        .args(["-p", &master.port.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    cli.stdin
        .take()
        .unwrap()
        .write_all(b"SET synced 1\nWAIT 1 200\n")
        .unwrap();
    let out = cli.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().nth(1) == Some("1")
}

/// Batched: concurrent purchases of one voucher share waits (one covers every write answered
/// before it), and each is acknowledged; `/readyz` names the standalone master's replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_share_their_waits() {
    let (master, _replica) = master_with_replica();
    let (gw, _) = gateway(master.url(), 1).await;
    open_voucher(&gw, "hot").await;
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(
        ready["write_replicas"],
        json!({"required": 1, "timeout_ms": 300, "degraded": false,
               "masters": [{"node": format!("127.0.0.1:{}", master.port), "replicas": 1}]}),
        "{ready}"
    );
    const BUYERS: usize = 200;
    let before = common::command_calls(&master, "wait");
    let buys = (0..BUYERS).map(|u| {
        let gw = &gw;
        async move {
            post(
                gw,
                "/v1/seckill/vouchers/hot/orders",
                None,
                &purchase_body(u + 1),
            )
            .await
        }
    });
    for (status, body, _) in futures::future::join_all(buys).await {
        assert_eq!(status, 201, "{body}");
    }
    let used = common::command_calls(&master, "wait") - before;
    assert!(used >= 1, "no wait was made");
    assert!(
        used < BUYERS as u64 / 2,
        "{used} waits for {BUYERS} concurrent purchases"
    );
}

/// A wait blocks only the wait connection: while purchases wait for a paused replica, reads and
/// refusals on the request connections are answered first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_does_not_stall_other_requests() {
    let (master, replica) = master_with_replica();
    // A wait long enough to be seen under way (and the reads made meanwhile) on a busy machine.
    let (gw, _) = gateway_waiting(master.url(), 1, Duration::from_secs(3)).await;
    open_voucher(&gw, "w").await;
    let replica_pid = replica.pid();
    signal("-STOP", &replica_pid);
    let buy = async {
        let r = post(
            &gw,
            "/v1/seckill/vouchers/w/orders",
            Some("k1"),
            &purchase_body(1),
        )
        .await;
        (r, Instant::now())
    };
    let read = async {
        // Sent once the purchase's write is done and its wait under way: the master holds a
        // client blocked in WAIT.
        let waiting = "the purchase waits for the replica";
        eventually_holds(Duration::from_secs(10), waiting, || {
            master
                .cli(&["info", "clients"])
                .is_some_and(|i| i.contains("blocked_clients:1"))
        })
        .await;
        let mut done = Vec::new();
        for _ in 0..5 {
            let (status, _) = gw.get("/v1/seckill/vouchers/w").await;
            assert_eq!(status, 200);
            done.push(Instant::now());
        }
        done
    };
    let (((status, body, retry_after), bought_at), reads) = tokio::join!(buy, read);
    signal("-CONT", &replica_pid);
    assert_eq!(status, 503, "{body}");
    assert!(retry_after);
    assert!(
        reads.iter().all(|r| *r < bought_at),
        "reads waited behind the replica wait"
    );
    // The retry with its key answers the recorded order once the replica holds it (503s until
    // the resumed replica has caught up).
    let retried = until_every(Duration::from_secs(10), RETRY, || async {
        let path = "/v1/seckill/vouchers/w/orders";
        let (status, body, _) = post(&gw, path, Some("k1"), &purchase_body(1)).await;
        if status == 201 {
            return Some(());
        }
        assert_eq!(status, 503, "{body}");
        None
    })
    .await;
    assert!(retried.is_some(), "the retry never succeeded");
    let (_, orders) = gw.get("/v1/seckill/vouchers/w/orders").await;
    assert_eq!(
        orders["orders"].as_array().map(Vec::len),
        Some(1),
        "{orders}"
    );
}

/// A master demoted while a purchase's `WAIT` blocks on it answers that `WAIT` with `UNBLOCKED`
/// (as a Cluster master does that wakes to find its replica promoted): the write's fate is
/// unknown, so the purchase is `503` with `Retry-After`, never a `500`, and its retry with the
/// same key, once the master is one again, answers the one order it made.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_master_demoted_during_a_wait_answers_unavailable() {
    let (master, replica) = master_with_replica();
    let (gw, _) = gateway_waiting(master.url(), 1, Duration::from_secs(20)).await;
    open_voucher(&gw, "d").await;
    let replica_pid = replica.pid();
    signal("-STOP", &replica_pid);
    let path = "/v1/seckill/vouchers/d/orders";
    let demote = async {
        eventually_holds(
            Duration::from_secs(10),
            "the purchase waits for the replica",
            || {
                master
                    .cli(&["info", "clients"])
                    .is_some_and(|i| i.contains("blocked_clients:1"))
            },
        )
        .await;
        // Redis unblocks every blocked client when it turns replica (the replica it is
        // told to follow is paused, so it keeps its data meanwhile).
        let port = replica.port.to_string();
        assert_eq!(
            master
                .cli(&["replicaof", "127.0.0.1", &port])
                .as_deref()
                .map(str::trim),
            Some("OK")
        );
    };
    let buyer = purchase_body(1);
    let ((status, body, retry_after), ()) =
        tokio::join!(post(&gw, path, Some("u1"), &buyer), demote);
    let promoted = master.cli(&["replicaof", "no", "one"]);
    assert_eq!(promoted.as_deref().map(str::trim), Some("OK"));
    signal("-CONT", &replica_pid);
    assert_eq!((status, retry_after), (503, true), "{body}");
    assert_eq!(body["code"], "backend_unavailable", "{body}");
    let retried = until_every(Duration::from_secs(10), RETRY, || async {
        let (status, body, _) = post(&gw, path, Some("u1"), &purchase_body(1)).await;
        if status == 201 {
            return Some(body);
        }
        assert_eq!(status, 503, "{body}");
        None
    })
    .await;
    assert!(retried.is_some(), "the retry never succeeded");
    let (_, orders) = gw.get(path).await;
    assert_eq!(
        orders["orders"].as_array().map(Vec::len),
        Some(1),
        "{orders}"
    );
}

/// The order ledger takes only what a failover cannot lose: an order its replica has not
/// confirmed (the purchase answered 503) stays out of PostgreSQL, pending, until the replica
/// holds it. Taken at once, an order a failover then lost stayed in the ledger while the
/// buyer's retry sold another, which the ledger refused as the user's second (a
/// fault-injection run found both).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_ledger_takes_only_what_the_replicas_hold() {
    use sqlx::postgres::PgPoolOptions;
    let (master, replica) = master_with_replica();
    let pg = common::postgres::Postgres::start();
    let mut s = common::settings(Backend::Memory);
    s.store = StoreChoice::Redis(master.url());
    s.write_replicas = WriteReplicas {
        replicas: 1,
        timeout: WAIT,
    };
    s.ledger.database_url = Some(pg.url("postgres"));
    s.ledger.claim_idle = Duration::from_millis(300);
    let gw = Gateway::with_settings(s).await;
    let db = PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg.url("postgres"))
        .await
        .unwrap();
    let rows = || async {
        sqlx::query_scalar::<_, String>("SELECT order_id FROM seckill_orders ORDER BY order_id")
            .fetch_all(&db)
            .await
            .unwrap_or_default()
    };
    open_voucher(&gw, "l").await;
    let path = "/v1/seckill/vouchers/l/orders";
    let (status, first, _) = post(&gw, path, None, &purchase_body(1)).await;
    assert_eq!(status, 201, "{first}");
    eventually(
        Duration::from_secs(60),
        "the first order in the ledger",
        || async { (rows().await.len() == 1).then_some(()) },
    )
    .await;
    let replica_pid = replica.pid();
    signal("-STOP", &replica_pid);
    let (status, body, _) = post(&gw, path, Some("l2"), &purchase_body(2)).await;
    assert_eq!(status, 503, "{body}");
    // Taken (pending in the group) and not written: the replica holds none of it.
    let ledger = eventually(Duration::from_secs(60), "the order taken", || async {
        let ledger = gw.get("/readyz").await.1["ledger"].clone();
        (ledger["pending"] == 1).then_some(ledger)
    })
    .await;
    assert_eq!(ledger["lag"], 1, "{ledger}");
    assert_eq!(rows().await, [first["order_id"].as_str().unwrap()]);
    signal("-CONT", &replica_pid);
    let second = until_every(Duration::from_secs(10), RETRY, || async {
        let (status, body, _) = post(&gw, path, Some("l2"), &purchase_body(2)).await;
        if status == 201 {
            return Some(body);
        }
        assert_eq!(status, 503, "{body}");
        None
    })
    .await
    .expect("the retry never succeeded");
    let mut want = vec![
        first["order_id"].as_str().unwrap().to_owned(),
        second["order_id"].as_str().unwrap().to_owned(),
    ];
    want.sort();
    eventually(
        Duration::from_secs(60),
        "both orders in the ledger",
        || async { (rows().await == want).then_some(()) },
    )
    .await;
}

/// An ack's refusal is answered once the replica holds the state it read, as its success is: a
/// refusal read off a master a failover then discards would tell a retrying worker "not acked"
/// where the surviving history says acked. While the replica is paused a refused ack is `503`
/// (retry), and `409` once the replica is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_ack_refusal_waits_for_its_replica() {
    let (master, replica) = master_with_replica();
    let (gw, _) = gateway(master.url(), 1).await;
    common::enqueue(&gw, "r", json!({"id": "j", "payload": 1})).await;
    let jobs = common::claim(&gw, "r", json!({})).await;
    let path = "/v1/queues/r/jobs/j/ack";
    let receipt = jobs[0]["receipt"].as_str().unwrap().to_owned();
    let (attempts, seq) = receipt.split_once('.').unwrap();
    let stale = json!({"receipt": format!("{}.{seq}", attempts.parse::<u64>().unwrap() + 1)});
    let replica_pid = replica.pid();
    signal("-STOP", &replica_pid);
    let (status, body, retry_after) = post(&gw, path, Some("a1"), &stale).await;
    signal("-CONT", &replica_pid);
    assert_eq!((status, retry_after), (503, true), "{body}");
    let refused = until_every(Duration::from_secs(10), RETRY, || async {
        let (status, body, _) = post(&gw, path, Some("a1"), &stale).await;
        if status == 409 {
            return Some(body);
        }
        assert_eq!(status, 503, "{body}");
        None
    })
    .await
    .expect("never refused once the replica was back");
    assert_eq!(refused["code"], "receipt_expired", "{refused}");
    let (status, body, _) = post(&gw, path, None, &json!({ "receipt": receipt })).await;
    assert_eq!(status, 204, "{body}");
}

/// A renewal that moved a lease waits for the replica as an acquisition does (the lease a
/// holder relies on must survive a failover); one refused wrote nothing and is answered as
/// refused, even when it shares a script run with the renewal that waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_renewal_waits_for_its_replica() {
    let (master, replica) = master_with_replica();
    let (gw, _) = gateway(master.url(), 1).await;
    let (status, lock, _) = post(&gw, "/v1/locks/renewed", None, &lock_body()).await;
    assert_eq!(status, 200, "{lock}");
    let renew = |token: u64| {
        let body = json!({"owner": lock["owner"], "token": token, "ttl_ms": 60_000});
        let gw = &gw;
        async move { post(gw, "/v1/locks/renewed/renew", None, &body).await }
    };
    let token = lock["token"].as_u64().expect("a token");
    let replica_pid = replica.pid();
    signal("-STOP", &replica_pid);
    let ((held, body, retry_after), (lost, lost_body, _)) =
        tokio::join!(renew(token), renew(token + 1));
    signal("-CONT", &replica_pid);
    assert_eq!((held, retry_after), (503, true), "{body}");
    assert_eq!(body["code"], "backend_unavailable", "{body}");
    assert_eq!(lost, 409, "{lost_body}");
    assert_eq!(lost_body["code"], "lock_lost", "{lost_body}");
    // Once the replica is back the same renewal is acknowledged.
    let renewed = until_every(Duration::from_secs(10), RETRY, || async {
        let (status, body, _) = renew(token).await;
        if status == 200 {
            return Some(());
        }
        assert_eq!(status, 503, "{body}");
        None
    })
    .await;
    assert!(renewed.is_some(), "never renewed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_one_replica_required_no_acknowledged_write_is_lost() {
    failover_after_paused_writes(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_replicas_required_a_failover_loses_acknowledged_writes() {
    failover_after_paused_writes(0).await;
}
