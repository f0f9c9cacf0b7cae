//! What the binary says when its configuration or its Redis is wrong (docs/configuration.md
//! "Checks at start-up", docs/operations.md "Probes"): each refusal names the one setting
//! it is about, and a Redis that cannot be used is told apart by why, in the start-up line and
//! in `/readyz`'s `reason`.

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::binary::{self, Binary};
use common::RedisProcess;
use serde_json::{json, Value};

/// Runs the binary with `env` and expects it to refuse to start; its stderr.
fn refused(env: &[(&str, &str)]) -> String {
    let exit = Binary::run(env, &[]);
    assert!(!exit.status.success(), "started with {env:?}");
    assert!(
        !exit.stderr.contains("panicked"),
        "a refusal, not a crash: {}",
        exit.stderr
    );
    exit.stderr
}

#[test]
fn a_redis_url_needs_a_scheme_the_gateway_speaks() {
    for url in [
        "localhost:6379",
        "http://127.0.0.1:6379",
        "user:s3cret@localhost:6379",
        "valkey://127.0.0.1:6379",
    ] {
        let err = refused(&[("REDIS_URL", url)]);
        assert!(err.contains("REDIS_URL"), "{url}: {err}");
        for scheme in ["redis://", "rediss://", "redis-cluster://"] {
            assert!(err.contains(scheme), "{url}: {scheme} not named: {err}");
        }
        assert!(
            !err.contains("s3cret"),
            "the URL's password is repeated: {err}"
        );
    }
    let err = refused(&[("REDIS_URL", "http://127.0.0.1:6379")]);
    assert!(err.contains("unsupported scheme http://"), "{err}");
}

#[test]
fn a_value_that_does_not_parse_names_the_variable_set() {
    let err = refused(&[("GATEWAY_GLOBAL_BURST", "abc")]);
    assert!(err.contains("GATEWAY_GLOBAL_BURST=abc"), "{err}");
    assert!(err.contains("invalid digit"), "{err}");
    let err = refused(&[("GATEWAY_LOG_FORMAT", "xml")]);
    assert!(err.contains("GATEWAY_LOG_FORMAT=xml"), "{err}");
    assert!(err.contains("text, json"), "the choices: {err}");
    // Given as a flag, the flag is what was wrong.
    let exit = Binary::run(&[], &["--global-burst", "x"]);
    assert!(!exit.status.success());
    assert!(exit.stderr.contains("--global-burst x"), "{}", exit.stderr);
}

#[test]
fn each_invalid_setting_is_named_alone() {
    for var in [
        "GATEWAY_MAX_BATCH",
        "GATEWAY_BODY_LIMIT",
        "GATEWAY_REDIS_POOL_SIZE",
        "GATEWAY_GLOBAL_COUNT",
        "GATEWAY_HEADER_TIMEOUT_MS",
        "GATEWAY_STORE_TIMEOUT_MS",
        "GATEWAY_UV_RETENTION_DAYS",
        "GATEWAY_DEDUP_CAPACITY",
        "GATEWAY_MAX_ITEM_BYTES",
        "GATEWAY_WORKERS",
        "GATEWAY_WRITE_REPLICAS_TIMEOUT_MS",
    ] {
        let err = refused(&[(var, "0")]);
        assert!(err.contains(&format!("{var}=0")), "{var}: {err}");
        assert_eq!(
            err.matches("GATEWAY_").count(),
            1,
            "{var}=0 names other settings too: {err}"
        );
    }
}

#[test]
fn a_short_visitor_key_is_refused_without_being_repeated() {
    let err = refused(&[("GATEWAY_UV_VISITOR_KEY", "guessable")]);
    assert!(err.contains("GATEWAY_UV_VISITOR_KEY"), "{err}");
    assert!(err.contains("at least 16 bytes"), "{err}");
    assert!(!err.contains("guessable"), "the secret is repeated: {err}");
}

#[test]
fn write_replicas_need_redis() {
    // The embedded backend has no replicas to wait for: refused in one line, not ignored.
    let err = refused(&[("GATEWAY_WRITE_REPLICAS", "1")]);
    assert!(err.contains("GATEWAY_WRITE_REPLICAS=1"), "{err}");
    assert!(err.contains("REDIS_URL"), "what to do: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let exit = Binary::run(&[], &["--write-replicas", "2"]);
    assert!(!exit.status.success());
    assert!(
        exit.stderr.contains("GATEWAY_WRITE_REPLICAS=2"),
        "{}",
        exit.stderr
    );
}

#[test]
fn openapi_to_a_closed_pipe_exits_quietly() {
    let (mut cmd, _) = binary::command(&[]);
    let mut child = cmd
        .arg("openapi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read the start, then hang up as `| head` does: the document is larger than a pipe holds
    // (64 KiB on Linux), so the binary is still writing when the pipe closes.
    let mut stdout = child.stdout.take().unwrap();
    let mut start = [0u8; 16];
    stdout.read_exact(&mut start).unwrap();
    assert!(std::str::from_utf8(&start).unwrap().starts_with('{'));
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
    let document = std::fs::read_to_string("openapi/openapi.json").unwrap();
    assert!(document.len() > 64 * 1024, "too small to fill a pipe");
}

/// Starts the binary on `url`, expects it to serve first, then its line about Redis to give
/// `reason`, and `/readyz` to answer 503 with the same `reason`.
async fn unusable(url: &str, reason: &str) {
    let gw = Binary::start(&[
        ("REDIS_URL", url),
        ("GATEWAY_LOG_FORMAT", "json"),
        ("GATEWAY_STORE_TIMEOUT_MS", "500"),
    ]);
    gw.line(|l| l.contains("serving on"));
    let line = gw.line(|l| l.contains("Redis is not reachable yet"));
    let entry: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["level"], "WARN", "{line}");
    assert_eq!(entry["reason"], reason, "{url}: {line}");
    let r = reqwest::get(gw.url("/readyz")).await.unwrap();
    assert_eq!(r.status(), 503, "{url}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "backend_unavailable", "{url}: {body}");
    assert_eq!(body["reason"], reason, "{url}: {body}");
}

#[tokio::test]
async fn a_refused_connection_is_told_apart() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    unusable(&format!("redis://127.0.0.1:{port}"), "connection_refused").await;
}

#[tokio::test]
async fn a_refused_password_is_told_apart() {
    let redis = RedisProcess::start(&[], false);
    redis
        .cli(&["config", "set", "requirepass", "s3cret"])
        .expect("requirepass set");
    let port = redis.url().rsplit(':').next().unwrap().to_owned();
    unusable(
        &format!("redis://127.0.0.1:{port}"),
        "authentication_failed",
    )
    .await;
    unusable(
        &format!("redis://:wrong@127.0.0.1:{port}"),
        "authentication_failed",
    )
    .await;
    // The right password serves, so the two above were about the password.
    let gw = Binary::start(&[("REDIS_URL", &format!("redis://:s3cret@127.0.0.1:{port}"))]);
    gw.wait_ready().await;
}

#[tokio::test]
async fn an_unknown_database_is_told_apart() {
    let redis = common::shared_redis();
    unusable(&format!("{}/99", redis.url()), "unknown_database").await;
}

#[tokio::test]
async fn tls_to_a_server_without_it_is_told_apart() {
    let redis = common::shared_redis();
    let url = redis.url().replacen("redis://", "rediss://", 1);
    unusable(&url, "tls_failed").await;
}

#[tokio::test]
async fn a_server_that_never_answers_is_a_timeout() {
    // Connections complete in the backlog, and nothing ever reads them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    unusable(&format!("redis://127.0.0.1:{port}"), "timeout").await;
    drop(silent);
}

/// A Redis that is down at start leaves the gateway answering (docs/operations.md "Probes"):
/// `/healthz` 200, `/readyz` 503 with why (and no address), an API operation 503
/// `backend_unavailable` with `Retry-After` — each long before the 20 s store timeout, which a
/// gateway that waited for Redis before serving would have spent first (twice: its shared pool,
/// then its workers'). Once Redis starts, the API serves without a restart.
///
/// Real time and a real process throughout: what is tested is when the binary's port answers
/// while another process (Redis) is absent, and fred reconnecting on its own back-off once it
/// is there. The bounds are generous on purpose; only a gateway that waits for the store
/// before answering (20 s here) comes near them.
#[tokio::test]
async fn answers_at_once_while_redis_is_down_at_start() {
    const BOUND: Duration = Duration::from_secs(10);
    let mut redis = RedisProcess::start(&[], false);
    redis.stop();
    let spawned = Instant::now();
    let gw = Binary::start(&[
        ("REDIS_URL", &redis.url()),
        ("GATEWAY_STORE_TIMEOUT_MS", "20000"),
        ("GATEWAY_WORKERS", "2"),
    ]);
    // A port bound but not served holds a request rather than refusing it.
    let client = reqwest::Client::builder().timeout(BOUND).build().unwrap();
    let healthz = loop {
        if let Ok(r) = client.get(gw.url("/healthz")).send().await {
            break r;
        }
        assert!(spawned.elapsed() < BOUND, "the port answered nothing");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    eprintln!(
        "/healthz answered {:?} after the spawn, Redis down",
        spawned.elapsed()
    );
    assert_eq!(healthz.status(), 200);

    // Why, once fred's first attempt was refused (at once: nothing listens on the port).
    let ready = loop {
        let r = client.get(gw.url("/readyz")).send().await.unwrap();
        assert_eq!(r.status(), 503);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["code"], "backend_unavailable", "{body}");
        if body["reason"] == "connection_refused" || spawned.elapsed() > BOUND {
            break body;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ready["reason"], "connection_refused", "{ready}");
    let shown = ready.to_string();
    for raw in ["127.0.0.1", &redis.port.to_string()] {
        assert!(!shown.contains(raw), "/readyz shows {raw}: {shown}");
    }

    let asked = Instant::now();
    let r = client
        .post(gw.url("/v1/uv/home"))
        .json(&json!({"visitor": "v1"}))
        .send()
        .await
        .unwrap();
    let took = asked.elapsed();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["code"], "backend_unavailable", "{body}");
    assert_eq!(body["reason"], "connection_refused", "{body}");
    assert!(
        took < BOUND,
        "the API waited {took:?} for a store that is not there"
    );
    // The documentation needs no store.
    let docs = client.get(gw.url("/openapi.json")).send().await.unwrap();
    assert_eq!(docs.status(), 200);
    assert!(
        gw.lines_so_far()
            .iter()
            .all(|l| !l.contains("not reachable")),
        "all of the above was answered within the first-connection wait"
    );

    redis.restart();
    // fred retries at most 2 s apart; the bound only catches a gateway that never serves.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = client
            .post(gw.url("/v1/uv/home"))
            .json(&json!({"visitor": "v1"}))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(
            Instant::now() < deadline,
            "the API never served after Redis started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        client.get(gw.url("/readyz")).send().await.unwrap().status(),
        200
    );
}
