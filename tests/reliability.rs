//! Store outages, recovery, script reloads, metrics and graceful shutdown, against real
//! `redis-server` processes this test stops and starts.

mod common;

use std::time::{Duration, Instant};

use common::{Backend, Gateway, RedisProcess};
use redis_gateway::config::{FailPolicy, StoreChoice};
use serde_json::json;

fn settings_on(redis: &RedisProcess) -> redis_gateway::settings::Settings {
    let mut s = common::settings(Backend::Memory);
    s.store = StoreChoice::Redis(redis.url());
    s.store_timeout = Duration::from_millis(300);
    s
}

/// Polls `path` until it answers 200; the issue allows 10 s for recovery.
async fn wait_for_200(gw: &Gateway, path: &str) {
    let recovered = format!("{path} recovers");
    common::poll::eventually(Duration::from_secs(10), &recovered, || async {
        let r = gw.client.get(gw.url(path)).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_is_503_and_recovery_needs_no_restart() {
    let mut redis = RedisProcess::start(&[], false);
    let gw = Gateway::with_settings(settings_on(&redis)).await;
    assert_eq!(gw.post("/v1/checkins/1", json!({})).await.0, 200);

    redis.stop();
    // A hang would trip the client's 30 s timeout and fail `send`; the store timeout is 300 ms.
    for path in [
        "/v1/checkins/1",
        "/v1/checkins/stats?from=2026-01-01&to=2026-01-02",
    ] {
        let (status, body) = gw.get(path).await;
        assert_eq!(
            (status.as_u16(), body["code"].as_str()),
            (503, Some("backend_unavailable")),
            "{path}"
        );
    }
    let (status, body) = gw.post("/v1/checkins/1", json!({})).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (503, Some("backend_unavailable"))
    );
    // `/readyz` probes the store at most once a second (docs/operations.md "Probes"): the outage
    // shows there within about that. Not timed: the bound, over ten times that, only catches
    // a probe answer that never goes stale.
    let body = common::poll::eventually(Duration::from_secs(20), "/readyz says 503", || async {
        let (status, body) = gw.get("/readyz").await;
        (status == 503).then_some(body)
    })
    .await;
    assert_eq!(body["code"], "backend_unavailable");
    assert_eq!(
        gw.get("/healthz").await.0,
        200,
        "liveness does not depend on the store"
    );

    // Redis comes back empty (no persistence): the scripts are gone too, so this also proves
    // the transparent NOSCRIPT reload.
    redis.restart();
    wait_for_200(&gw, "/readyz").await;
    let (status, body) = gw.post("/v1/checkins/1", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["already_checked_in"], false);

    let metrics = gw
        .client
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("gateway_store_errors_total"),
        "store errors are counted"
    );
    assert!(
        metrics.contains(r#"route="/v1/checkins/{user_id}""#),
        "requests are labelled by route template"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_while_redis_is_down_and_becomes_ready() {
    let mut redis = RedisProcess::start(&[], false);
    redis.stop();
    let settings = settings_on(&redis);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(redis_gateway::run(
        listener,
        settings,
        std::future::pending(),
    ));
    let client = reqwest::Client::new();
    let status = common::poll::eventually(Duration::from_secs(10), "the gateway serves", || {
        let readyz = client.get(format!("http://{addr}/readyz")).send();
        async move { Some(readyz.await.ok()?.status().as_u16()) }
    })
    .await;
    assert_eq!(status, 503, "not ready while Redis is down");
    assert!(!server.is_finished(), "the gateway keeps running");

    redis.restart();
    common::poll::eventually(Duration::from_secs(10), "a check-in after recovery", || {
        let checkin = client.post(format!("http://{addr}/v1/checkins/5")).send();
        async move { (checkin.await.unwrap().status() == 200).then_some(()) }
    })
    .await;
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_reload_after_script_flush() {
    let redis = common::shared_redis();
    let mut settings = common::settings(Backend::Redis);
    settings.store = StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(settings).await;
    assert_eq!(gw.post("/v1/checkins/9", json!({})).await.0, 200);
    redis.cli(&["script", "flush"]).expect("script flush");
    let (status, body) = gw.post("/v1/checkins/10", json!({})).await;
    assert_eq!(status, 200, "{body}");
}

/// SIGTERM while requests are in flight: every one of them completes, then the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_in_flight_requests() {
    let redis = RedisProcess::start(&[], false);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut gateway = common::process::tied(env!("CARGO_BIN_EXE_redis-gateway"));
    gateway
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GATEWAY_LISTEN", format!("127.0.0.1:{port}"))
        .env("REDIS_URL", redis.url())
        .env("GATEWAY_STORE_TIMEOUT_MS", "5000")
        .env("GATEWAY_GLOBAL_LIMIT", "off")
        .env("GATEWAY_ADMIN_TOKEN", common::ADMIN_TOKEN)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = common::process::spawn(gateway).expect("start the gateway binary");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    common::poll::eventually(Duration::from_secs(20), "the binary is ready", || {
        let readyz = client.get(format!("{base}/readyz")).send();
        async move { (readyz.await.ok()?.status() == 200).then_some(()) }
    })
    .await;

    let in_flight = || async {
        let text = client.get(format!("{base}/metrics")).send().await.ok()?;
        let text = text.text().await.ok()?;
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("gateway_http_requests_in_flight "))?;
        line.trim().parse::<f64>().ok()
    };
    // The scrape itself may count.
    let idle = common::poll::eventually(Duration::from_secs(10), "a scrape", in_flight).await;

    // Redis stopped (SIGSTOP: stopped once `kill` returns), so the requests below are
    // genuinely in flight at SIGTERM; it resumes once the gateway has been told to stop.
    let redis_pid = redis.pid();
    let signal = |sig: &str, pid: &str| {
        let sent = std::process::Command::new("kill")
            .args([sig, pid])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {sig} {pid}");
    };
    signal("-STOP", &redis_pid);
    let requests: Vec<_> = (0..50)
        .map(|i| {
            let (client, url) = (client.clone(), format!("{base}/v1/checkins/{i}"));
            tokio::spawn(async move { client.post(url).send().await.map(|r| r.status().as_u16()) })
        })
        .collect();
    let waiting = "the 50 requests in flight, waiting on the sleeping Redis";
    common::poll::eventually(Duration::from_secs(10), waiting, || async {
        in_flight().await.filter(|n| *n >= idle + 50.0)
    })
    .await;
    signal("-TERM", &child.id().to_string());
    signal("-CONT", &redis_pid);

    for r in requests {
        assert_eq!(r.await.unwrap().expect("in-flight request completes"), 200);
    }
    let mut status = None;
    common::poll::until_blocking(Duration::from_secs(15), || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let status = status.expect("gateway exits after draining");
    assert!(status.success(), "clean exit after SIGTERM: {status}");
    assert!(
        client.get(format!("{base}/healthz")).send().await.is_err(),
        "no longer accepting"
    );
}

/// A purchase whose answer is lost in a stalled Redis (paused with SIGSTOP while the script is
/// in flight) is a 503; the client's retry with the same `Idempotency-Key` gets the sale that
/// did happen, and nothing is bought twice — although this voucher would sell the same user a
/// second unit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purchase_lost_in_a_stall_is_retried_once_with_its_key() {
    let redis = RedisProcess::start(&[], false);
    let gw = Gateway::with_settings(settings_on(&redis)).await;
    let at = |m: i64| (chrono::Utc::now() + chrono::Duration::minutes(m)).to_rfc3339();
    let (status, body) = gw
        .admin_put(
            "/v1/seckill/vouchers/stall",
            json!({"stock": 10, "begin": at(-1), "end": at(60), "per_user_limit": 5}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let info = redis.cli(&["INFO", "server"]).unwrap();
    let pid = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned();
    let signal = |sig: &str| {
        assert!(std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    let buy = || async {
        let r = gw
            .client
            .post(gw.url("/v1/seckill/vouchers/stall/orders"))
            .header("idempotency-key", "stalled-purchase")
            .json(&json!({"user_id": 7}))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json::<serde_json::Value>().await.unwrap())
    };

    signal("-STOP");
    let (status, body) = buy().await;
    signal("-CONT");
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("backend_unavailable")),
        "the outcome is unknown: {body}"
    );
    // The retry, once Redis answers again.
    let (status, order) =
        common::poll::eventually(Duration::from_secs(10), "Redis comes back", || async {
            let (status, body) = buy().await;
            (status != 503).then_some((status, body))
        })
        .await;
    assert_eq!(status, 201, "{order}");
    let (_, mine) = gw.get("/v1/seckill/vouchers/stall/orders/7").await;
    assert_eq!(
        mine["orders"].as_array().unwrap().len(),
        1,
        "exactly one order: {mine}"
    );
    assert_eq!(mine["orders"][0]["order_id"], order["order_id"]);
    let (_, v) = gw.get("/v1/seckill/vouchers/stall").await;
    assert_eq!(v["sold"], 1, "{v}");
}

/// `GATEWAY_REQUEST_TIMEOUT_MS` bounds a request even when the store call would wait longer:
/// with Redis paused and a 5 s store timeout, a 300 ms request timeout answers 503
/// problem+json first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_timeout_answers_before_a_slow_store() {
    let redis = RedisProcess::start(&[], false);
    let mut s = settings_on(&redis);
    s.store_timeout = Duration::from_secs(5);
    s.request_timeout = Duration::from_millis(300);
    let gw = Gateway::with_settings(s).await;
    let pid = redis
        .cli(&["INFO", "server"])
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned();
    let signal = |sig: &str| {
        assert!(std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };
    signal("-STOP");
    let (status, body) = gw.get("/v1/checkins/7/2026-01-01").await;
    signal("-CONT");
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], "backend_unavailable");
    // Which timeout answered, as the problem says rather than as timed here: the store's
    // would be `"reason": "timeout"`, "the store did not answer in time".
    assert_eq!(
        (body["detail"].as_str(), body.get("reason")),
        (Some("the request did not complete in time"), None),
        "answered by the store timeout, not the request's: {body}"
    );
}

/// A stalled store (Redis paused with SIGSTOP) is answered `503 backend_unavailable` with
/// `Retry-After` within one store timeout of the stall, whatever layers the request passes:
/// the global limiter, whose own charge waits the timeout and fails open (the default) or
/// closed, then the handler's store call. Each of them waited a whole timeout of its own, so a
/// page view or a check-in took two. A 2 s timeout and a 3.5 s bound: one timeout and a
/// loaded machine's slack pass, two timeouts (4 s) do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_answers_within_one_store_timeout_through_the_limiter() {
    const STORE_TIMEOUT: Duration = Duration::from_secs(2);
    const BOUND: Duration = Duration::from_millis(3_500);
    let redis = RedisProcess::start(&[], false);
    let limited = |fail: FailPolicy| {
        let mut s = settings_on(&redis);
        s.store_timeout = STORE_TIMEOUT;
        s.global.enabled = true;
        s.global.fail = fail;
        s
    };
    let open = Gateway::with_settings(limited(FailPolicy::Open)).await;
    let closed = Gateway::with_settings(limited(FailPolicy::Closed)).await;
    let requests = [
        (&open, "/v1/uv/home", json!({"visitor": "a"})),
        (&open, "/v1/checkins/1", json!({})),
        (&closed, "/v1/uv/home", json!({"visitor": "a"})),
    ];
    for (gw, path, body) in &requests {
        let (status, reply) = gw.post(path, body.clone()).await;
        assert_eq!(status, 200, "{path} before the stall: {reply}");
    }
    let pid = redis.pid();
    let signal = |sig: &str| {
        assert!(std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    };

    signal("-STOP");
    let answers = futures::future::join_all(
        requests
            .iter()
            .map(|(gw, path, body)| timed_post(gw, path, body.clone())),
    )
    .await;
    signal("-CONT");
    let times: Vec<_> = answers.iter().map(|a| a.0).collect();
    for ((_, path, _), (elapsed, status, reply, retry_after)) in requests.iter().zip(&answers) {
        assert_eq!(
            (*status, reply["code"].as_str()),
            (503, Some("backend_unavailable")),
            "{path}: {reply}"
        );
        assert!(*retry_after, "{path}: 503 without Retry-After");
        assert!(
            *elapsed < BOUND,
            "{path} answered after {elapsed:?}, more than one store timeout ({STORE_TIMEOUT:?}); \
             all: {times:?}"
        );
    }

    // Redis answers again: so does the gateway, without a restart.
    for (gw, path, body) in &requests {
        // A real redis-server resuming, and the client reconnecting to it.
        let served = format!("{path} served after the stall");
        common::poll::eventually(Duration::from_secs(10), &served, || async {
            (gw.post(path, body.clone()).await.0 == 200).then_some(())
        })
        .await;
    }
}

/// How long a POST took to answer, its status, its problem and whether it says `Retry-After`.
async fn timed_post(
    gw: &Gateway,
    path: &str,
    body: serde_json::Value,
) -> (Duration, u16, serde_json::Value, bool) {
    let started = Instant::now();
    let r = gw.client.post(gw.url(path)).json(&body).send().await;
    let elapsed = started.elapsed();
    let r = r.expect("the gateway answers");
    let retry_after = r.headers().contains_key("retry-after");
    let status = r.status().as_u16();
    (
        elapsed,
        status,
        r.json().await.unwrap_or_default(),
        retry_after,
    )
}
