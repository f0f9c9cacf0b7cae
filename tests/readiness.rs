//! `/readyz` probes the store at most once a second whatever the callers do (docs/operations.md
//! "Probes"): it is never rate limited, so each call running `INFO` on Redis would let anyone
//! drive the store as hard as they can send requests.
//!
//! A test binary of its own: the 503 half counts failed probes with the process-wide
//! `gateway_store_errors_total`, which no other test here may move.

mod common;

use std::time::{Duration, Instant};

use common::poll::eventually;
use common::RedisProcess;
use futures::future::join_all;
use reqwest::StatusCode;

/// `INFO` calls `redis` has served (this one asking is counted from the next call on).
fn info_calls(redis: &RedisProcess) -> u64 {
    common::command_calls(redis, "info")
}

/// Store calls that failed, as `/metrics` counts them, less the calls of the limit overrides'
/// poll (docs/policies.md, every 250 ms): while the store is down each of those fails too, and
/// four a second would be taken for probes. Signed: only its change means anything, and the
/// polls that succeeded before count too.
async fn store_errors(gw: &common::Gateway) -> i64 {
    let text = gw
        .client
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sum = |prefix: &str| {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as i64
    };
    let polls = sum(r#"gateway_store_call_duration_seconds_count{op="limiter.overrides_"#);
    sum("gateway_store_errors_total") - polls
}

/// Sends `waves` bursts of 100 concurrent `/readyz` (and a few `/metrics`, which share the
/// probe), all expected to answer `want`; returns how long that took.
async fn burst(gw: &common::Gateway, waves: usize, want: StatusCode) -> Duration {
    let started = Instant::now();
    for _ in 0..waves {
        let ready = join_all((0..100).map(|_| gw.get("/readyz"))).await;
        for (status, body) in ready {
            assert_eq!(status, want, "{body}");
        }
        let metrics = join_all((0..5).map(|_| gw.client.get(gw.url("/metrics")).send())).await;
        for r in metrics {
            assert_eq!(r.unwrap().status(), 200);
        }
    }
    started.elapsed()
}

/// Probes start at least a second apart, so in `elapsed` at most this many can start.
fn most_probes_in(elapsed: Duration) -> u64 {
    elapsed.as_secs() + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_probes_the_store_at_most_once_a_second() {
    let (mut redis, gw, _) = common::on_private_redis().await;

    // Up: a burst of 500 calls shares the probes; every caller still gets the full answer.
    let before = info_calls(&redis);
    let took = burst(&gw, 5, StatusCode::OK).await;
    let probes = info_calls(&redis) - before - 1;
    assert!(
        probes <= most_probes_in(took),
        "{probes} INFO calls for 525 readiness calls in {took:?}"
    );
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["backend"], "redis");
    assert!(ready["redis_version"].is_string(), "{ready}");

    // The store goes away: the next probe, at most a second later, notices it — within its
    // store timeout (1 s by default: the client may hold the call while it reconnects). Not
    // timed: the bound, ten times those 2 s, only catches a shared answer that never expires.
    redis.stop();
    let down = "/readyz says 503 once Redis stopped";
    eventually(Duration::from_secs(20), down, || async {
        let (status, _) = gw.get("/readyz").await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return Some(());
        }
        assert_eq!(status, StatusCode::OK);
        None
    })
    .await;

    // Down: the 503 is shared the same way (each probe that fails is one store error).
    let before = store_errors(&gw).await;
    let took = burst(&gw, 5, StatusCode::SERVICE_UNAVAILABLE).await;
    let probes = store_errors(&gw).await - before;
    assert!(
        probes <= most_probes_in(took) as i64 + 1,
        "{probes} failed probes for 525 readiness calls in {took:?}"
    );

    // Back: noticed again once the client has reconnected (its back-off tops out at 2 s) and
    // the next probe runs (a second at most). Not timed: the bound, ten times those 3 s, only
    // catches a gateway that never sees the store again.
    redis.restart();
    let back = "/readyz says 200 again after Redis returned";
    eventually(Duration::from_secs(30), back, || async {
        (gw.get("/readyz").await.0 == StatusCode::OK).then_some(())
    })
    .await;
}
