//! One failing Redis master stops only its own slots, and fast. A real Cluster of 3
//! masters + 3 replicas per test; 12 kept-alive clients mix purchases, rate-limit checks and UV
//! adds over 24 names spread across every master while one master is killed (`SIGKILL`) or
//! hung (`SIGSTOP`).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::poll::{eventually, eventually_holds, until};
use common::{Backend, FailoverCluster, Gateway};
use redis_gateway::config::StoreChoice;
use serde_json::json;

const NAMES: usize = 24;
const WORKERS: usize = 12;

#[derive(Debug, Clone, Copy)]
struct Sample {
    name: usize,
    op: u8,
    start: Instant,
    latency: Duration,
    status: u16,
    /// A 503 without `Retry-After`.
    bare_503: bool,
    /// A 503 whose `reason` is `timeout`: the call waited out the store timeout (1 s), as one
    /// sent to a hung master does, rather than being refused at once.
    timed_out: bool,
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn signal(sig: &str, pid: &str) {
    assert!(std::process::Command::new("kill")
        .args([sig, pid])
        .status()
        .unwrap()
        .success());
}

/// Runs the mixed load, kills (`SIGKILL`) or hangs (`SIGSTOP`) the master owning name 0, and
/// checks the acceptance criteria; a hang is undone (`SIGCONT`) once a replica is
/// promoted.
async fn failover_under_load(hang: bool, full_coverage: bool) {
    let cluster = Arc::new(FailoverCluster::start(1000, full_coverage));
    let mut s = common::settings(Backend::Memory);
    s.store = StoreChoice::Redis(cluster.url());
    let gw = Arc::new(Gateway::with_settings(s).await);
    let names: Vec<String> = (0..NAMES).map(|i| format!("fo{i}")).collect();
    let slots: Vec<u16> = names.iter().map(|n| cluster.keyslot(n)).collect();
    let owners: Vec<u16> = slots.iter().map(|s| cluster.owner(*s).unwrap()).collect();
    let victim = owners[0];
    let doomed: Vec<bool> = owners.iter().map(|o| *o == victim).collect();
    assert!(doomed.iter().filter(|d| !**d).count() >= 8, "{owners:?}");
    let at = |m: i64| (chrono::Utc::now() + chrono::Duration::minutes(m)).to_rfc3339();
    for n in &names {
        let (status, body) = gw
            .admin_put(
                &format!("/v1/seckill/vouchers/{n}"),
                json!({"stock": 1_000_000, "begin": at(-1), "end": at(60), "per_user_limit": 1}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let users = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..WORKERS {
        let (gw, stop, samples, users, names) = (
            gw.clone(),
            stop.clone(),
            samples.clone(),
            users.clone(),
            names.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut k = w;
            while !stop.load(Ordering::Relaxed) {
                let name = k % NAMES;
                let op = ((k / NAMES) % 3) as u8;
                k += WORKERS + 1;
                let n = &names[name];
                let req = match op {
                    0 => gw
                        .client
                        .post(gw.url(&format!("/v1/seckill/vouchers/{n}/orders")))
                        .json(&json!({"user_id": users.fetch_add(1, Ordering::Relaxed) + 1})),
                    1 => gw.client.post(gw.url("/v1/ratelimit/check")).json(
                        &json!({"key": n, "max_burst": 1_000_000, "count_per_period": 1_000_000, "period": 1}),
                    ),
                    _ => gw
                        .client
                        .post(gw.url(&format!("/v1/uv/{n}")))
                        .json(&json!({"visitor": format!("v{k}")})),
                };
                let start = Instant::now();
                let (status, bare_503, timed_out) = match req.send().await {
                    Ok(r) => {
                        let s = r.status().as_u16();
                        let bare = s == 503 && r.headers().get("retry-after").is_none();
                        let body: serde_json::Value = r.json().await.unwrap_or_default();
                        (s, bare, s == 503 && body["reason"] == "timeout")
                    }
                    Err(_) => (0, false, false),
                };
                samples.lock().unwrap().push(Sample {
                    name,
                    op,
                    start,
                    latency: start.elapsed(),
                    status,
                    bare_503,
                    timed_out,
                });
            }
        }));
    }
    // Readiness as a load balancer sees it.
    let ready = Arc::new(Mutex::new(Vec::<(Instant, u16, serde_json::Value)>::new()));
    let ready_task = {
        let (gw, stop, ready) = (gw.clone(), stop.clone(), ready.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let at = Instant::now();
                if let Ok(r) = gw.client.get(gw.url("/readyz")).send().await {
                    let status = r.status().as_u16();
                    let body: serde_json::Value = r.json().await.unwrap_or_default();
                    ready.lock().unwrap().push((at, status, body));
                }
                // Real time: /readyz is sampled through a real failover.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };

    // The load runs against the healthy cluster before the master is lost: each voucher has
    // sold, so that what is acknowledged and then kept across the failover is tried.
    let sold = "every voucher sold before the fault";
    eventually_holds(Duration::from_secs(30), sold, || {
        let samples = samples.lock().unwrap();
        (0..NAMES).all(|name| {
            let acked = samples
                .iter()
                .filter(|s| s.name == name && s.op == 0 && s.status == 201);
            acked.count() >= 10
        })
    })
    .await;
    let pid = cluster.node(victim).pid();
    let fault = Instant::now();
    signal(if hang { "-STOP" } else { "-KILL" }, &pid);
    // Wait for a replica to take the victim's slots over: Redis's doing, a few seconds with
    // `cluster-node-timeout 1000`. The bound, over ten times that, only catches a Cluster
    // that never promotes one.
    let promotion = until(Duration::from_secs(60), || async {
        let c = cluster.clone();
        let slot = slots[0];
        let owner = tokio::task::spawn_blocking(move || c.owner(slot))
            .await
            .unwrap();
        owner.is_some_and(|o| o != victim).then(Instant::now)
    })
    .await;
    let Some(promoted) = promotion else {
        panic!(
            "no promotion: {:?} {:?}",
            cluster.masters(),
            cluster
                .nodes
                .iter()
                .find_map(|n| n.cli_timed(&["cluster", "nodes"]))
        );
    };
    if hang {
        signal("-CONT", &pid);
    }
    // Until the failed master's keys serve again (the gateway re-reads the slot table on the
    // first request for a down master: without that they never would), then a few seconds of
    // load on the new layout. The bound only catches the "never".
    let served = "the failed master's keys serve again after the promotion";
    eventually_holds(Duration::from_secs(30), served, || {
        samples
            .lock()
            .unwrap()
            .iter()
            .any(|s| doomed[s.name] && s.start >= promoted && (200..300).contains(&s.status))
    })
    .await;
    // Real time: the load goes on against the healed cluster.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    ready_task.await.unwrap();

    let samples = samples.lock().unwrap().clone();
    let during: Vec<&Sample> = samples.iter().filter(|s| s.start >= fault).collect();
    let healthy: Vec<&&Sample> = during.iter().filter(|s| !doomed[s.name]).collect();
    let ok = healthy
        .iter()
        .filter(|s| (200..300).contains(&s.status))
        .count();
    let healthy_p99 = percentile(healthy.iter().map(|s| s.latency).collect(), 0.99);
    let dead_503: Vec<Duration> = during
        .iter()
        .filter(|s| doomed[s.name] && s.start < promoted && s.status == 503)
        .map(|s| s.latency)
        .collect();
    let dead_median = percentile(dead_503.clone(), 0.5);
    // Of those, the ones that waited out the store timeout (sent to the master before it was
    // known down).
    let dead_timed_out = during
        .iter()
        .filter(|s| doomed[s.name] && s.start < promoted && s.timed_out)
        .count();
    let healthy_timed_out = healthy.iter().filter(|s| s.timed_out).count();
    let recovered = during
        .iter()
        .filter(|s| doomed[s.name] && s.start >= promoted && (200..300).contains(&s.status))
        .map(|s| s.start + s.latency)
        .min()
        .map(|t| t.saturating_duration_since(promoted));
    let ready = ready.lock().unwrap().clone();
    let not_ready = ready
        .iter()
        .filter(|(at, s, _)| *at >= fault && *s != 200)
        .count();
    eprintln!(
        "failover (hang={hang}, full coverage={full_coverage}): promotion {:?} after the fault; healthy {ok}/{} ok, p99 {healthy_p99:?}; \
         failed master's 503s before promotion: {} median {dead_median:?}, {dead_timed_out} timed out; \
         recovered {recovered:?} after promotion; readyz non-200 {not_ready}/{}",
        promoted - fault,
        healthy.len(),
        dead_503.len(),
        ready.iter().filter(|(at, _, _)| *at >= fault).count(),
    );

    // Nothing sold is doubled: each voucher's `sold` is at most its acknowledged purchases
    // plus those whose outcome was unknown (503). Nothing is lost either, but for one window
    // Redis itself leaves open: it replicates asynchronously, so a purchase the failed master
    // acknowledged in its last moments may not have reached the replica that replaces it
    // (docs/operations.md "Redis Cluster"; seen once in a SIGSTOP run, 74 sold of 75
    // acknowledged). Only purchases acknowledged within `LAG` before the fault may be missing.
    const LAG: Duration = Duration::from_millis(250);
    for (i, n) in names.iter().enumerate() {
        let acked = samples
            .iter()
            .filter(|s| s.name == i && s.op == 0 && s.status == 201)
            .count() as u64;
        let at_risk = samples
            .iter()
            .filter(|s| {
                s.name == i
                    && s.op == 0
                    && s.status == 201
                    && s.start <= fault
                    && s.start + s.latency + LAG >= fault
            })
            .count() as u64;
        let unknown = samples
            .iter()
            .filter(|s| s.name == i && s.op == 0 && (s.status == 503 || s.status == 0))
            .count() as u64;
        let answered = format!("voucher {n} answers after the failover");
        let sold = eventually(Duration::from_secs(10), &answered, || async {
            let (_, v) = gw.get(&format!("/v1/seckill/vouchers/{n}")).await;
            v["sold"].as_u64()
        })
        .await;
        assert!(
            (acked - at_risk..=acked + unknown).contains(&sold),
            "{n}: sold {sold}, acknowledged {acked} ({at_risk} within {LAG:?} before the fault), \
             unknown {unknown}"
        );
    }
    assert!(
        samples.iter().all(|s| !s.bare_503),
        "every 503 says when to retry (Retry-After)"
    );
    // With full coverage required, Redis itself refuses every key (`CLUSTERDOWN`) from the FAIL
    // flag to the promotion: those requests cannot succeed, they must only be refused fast.
    assert!(
        full_coverage || ok as f64 >= 0.99 * healthy.len() as f64,
        "healthy masters' requests: {ok}/{} succeeded",
        healthy.len()
    );
    // "Fast" told by what the gateway answered rather than by how long it took (the latencies
    // above are printed for the record, not checked: a loaded machine stretches them). A
    // request held up by the failed master waits out the store timeout (1 s) and says so,
    // `reason: timeout`. A healthy master's requests are never held up by it: at most one
    // stall of this machine past the store timeout may catch each worker's request in flight.
    assert!(
        healthy_timed_out < WORKERS,
        "{healthy_timed_out} of the healthy masters' requests waited out the store timeout"
    );
    // The failed master's: once it is known down (a refused connection, or three timeouts in
    // a row) they are refused at once without being sent, so only those already caught by it
    // wait; most of its 503s do not. A gateway that kept sending to it (before, every one
    // waited the store timeout: median 1,004 ms) fails this.
    assert!(
        !dead_503.is_empty() && dead_timed_out * 2 < dead_503.len(),
        "{dead_timed_out} of the failed master's {} 503s waited out the store timeout",
        dead_503.len()
    );
    if !full_coverage {
        assert_eq!(not_ready, 0, "/readyz left 200 during a partial outage");
        // While the victim is down, readiness names it and its slots.
        let victim_addr = format!("127.0.0.1:{victim}");
        assert!(
            ready.iter().any(|(at, _, body)| *at >= fault
                && *at < promoted
                && body["degraded"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|n| n["node"] == victim_addr.as_str()
                        && n["slots"].as_array().is_some_and(|r| !r.is_empty())))),
            "/readyz never named the failed master in `degraded`"
        );
        let last = &ready.last().unwrap().2;
        assert!(
            last.get("degraded").is_none(),
            "still degraded after recovery: {last}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_stops_only_its_own_slots() {
    failover_under_load(false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_master_stops_only_its_own_slots() {
    failover_under_load(true, false).await;
}

/// Redis's default, `cluster-require-full-coverage yes`: every node answers `CLUSTERDOWN` from
/// the FAIL flag to the promotion, and those refusals must be fast 503s too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_with_full_coverage_required_refuses_fast() {
    failover_under_load(false, true).await;
}
