//! The binary's worker threads (`GATEWAY_WORKERS`): one state for the whole process whichever
//! worker takes a connection, on the embedded store and on Redis.

mod common;

use std::process::Command;

use common::binary::Binary;
use common::RedisProcess;
use serde_json::json;

/// 60 visits, each on a connection of its own and 20 of them at once, land on whichever
/// worker accepts it; every worker sees them all: the view counter is exact.
async fn visits_on_many_connections_count_once(env: &[(&str, &str)]) {
    let gw = Binary::start(&[env, &[("GATEWAY_GLOBAL_LIMIT", "off")]].concat());
    gw.wait_ready().await;
    let workers: Vec<String> = gw
        .threads()
        .into_iter()
        .filter(|n| n.starts_with("gateway-worker"))
        .collect();
    assert_eq!(workers.len(), 3, "{workers:?}");
    let mut tasks = Vec::new();
    for i in 0..60 {
        let url = gw.url("/v1/uv/spread");
        tasks.push(tokio::spawn(async move {
            // A client per visit: a connection per visit.
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .unwrap();
            let r = client
                .post(url)
                .json(&json!({"visitor": format!("v{}", i % 50)}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
        }));
        if i % 20 == 19 {
            for t in tasks.drain(..) {
                t.await.unwrap();
            }
        }
    }
    let counts = gw.get_json("/v1/uv/spread").await;
    assert_eq!(counts["pv"], 60, "{counts}");
    // HyperLogLog's estimate; at 50 it is exact on Redis and on the embedded store alike.
    assert_eq!(counts["uv"], 50, "{counts}");
}

#[tokio::test]
async fn workers_share_the_embedded_store() {
    visits_on_many_connections_count_once(&[("GATEWAY_WORKERS", "3")]).await;
}

#[tokio::test]
async fn workers_share_redis() {
    let redis = RedisProcess::start(&[], false);
    visits_on_many_connections_count_once(&[("GATEWAY_WORKERS", "3"), ("REDIS_URL", &redis.url())])
        .await;
}

/// Write-like system calls of the whole process so far (`syscw` in `/proc/<pid>/io`).
fn writes_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .unwrap()
        .parse()
        .unwrap()
}

/// A request that calls Redis costs its worker two writes: the command to Redis and the
/// response. Tokio woke a worker's own I/O driver (an `eventfd` write) for each store call's
/// timeout until the worker's timer floor (`src/workers.rs`) kept a sooner timer pending.
#[tokio::test]
async fn a_store_call_costs_no_wake_up_write() {
    const VISITS: u64 = 300;
    let redis = RedisProcess::start(&[], false);
    let gw = Binary::start(&[
        ("GATEWAY_WORKERS", "1"),
        ("REDIS_URL", &redis.url()),
        ("GATEWAY_GLOBAL_LIMIT", "off"),
    ]);
    gw.wait_ready().await;
    let client = reqwest::Client::new();
    let visit = |i: u64| {
        client
            .post(gw.url("/v1/uv/writes"))
            .json(&json!({"visitor": format!("v{i}")}))
            .send()
    };
    for i in 0..20 {
        assert_eq!(visit(i).await.unwrap().status(), 200);
    }
    let before = writes_of(gw.pid());
    for i in 0..VISITS {
        assert_eq!(visit(i).await.unwrap().status(), 200);
    }
    let per_request = (writes_of(gw.pid()) - before) as f64 / VISITS as f64;
    eprintln!("{per_request:.2} write system calls per request");
    // Two, plus the access log's batched writes and the odd timer tick.
    assert!(
        per_request < 2.5,
        "{per_request:.2} writes per request: is a wake-up written per store call again?"
    );
}

/// Zero workers is a configuration error named as such, not a gateway that serves nothing.
#[test]
fn zero_workers_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_redis-gateway"))
        .env("GATEWAY_WORKERS", "0")
        .env("GATEWAY_LISTEN", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("GATEWAY_WORKERS"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
