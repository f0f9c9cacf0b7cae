//! What the binary says when its configuration or its Redis is wrong (docs/configuration.md
//! "Checks at start-up", docs/operations.md "Probes"): each refusal names the one setting
//! it is about, and a Redis that cannot be used is told apart by why, in the start-up line and
//! in `/readyz`'s `reason`.

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::binary::{self, Binary};
use common::poll;
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

/// `err` is one refusal in the one form, `error: invalid configuration: VAR (--flag): what
/// is wrong; what to write`, naming `var` once and no parser's own text; what follows the
/// setting.
fn in_form<'e>(err: &'e str, var: &str, flag: &str) -> &'e str {
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "one line: {err}");
    let rest = line
        .strip_prefix(&format!("error: invalid configuration: {var} ({flag}): "))
        .unwrap_or_else(|| panic!("not `invalid configuration: {var} ({flag}): …`: {err}"));
    let (_, hint) = rest
        .rsplit_once("; ")
        .unwrap_or_else(|| panic!("no `; what to write`: {err}"));
    assert!(
        ["write", "set", "stop"].iter().any(|w| hint.contains(w)),
        "the hint says what to write: {err}"
    );
    assert_eq!(line.matches(var).count(), 1, "{var} named twice: {err}");
    for raw in [
        "invalid digit",
        "gateway stopped",
        "store error",
        "Url Error",
    ] {
        assert!(!line.contains(raw), "{raw:?} in {err}");
    }
    rest
}

/// The flag of `var` by the naming rule every setting follows (`GATEWAY_MAX_BATCH`:
/// `--max-batch`), written out here rather than read from clap as the binary does.
fn flag(var: &str) -> String {
    let name = var.strip_prefix("GATEWAY_").unwrap_or(var);
    format!("--{}", name.to_lowercase().replace('_', "-"))
}

/// The refusal of `env`, in the form, about `var`.
fn refusal(env: &[(&str, &str)], var: &str, flag: &str) -> String {
    let err = refused(env);
    in_form(&err, var, flag).to_owned()
}

#[test]
fn a_redis_url_needs_a_scheme_the_gateway_speaks() {
    for url in [
        "localhost:6379",
        "http://127.0.0.1:6379",
        "user:s3cret@localhost:6379",
        "valkey://127.0.0.1:6379",
    ] {
        let err = refusal(&[("REDIS_URL", url)], "REDIS_URL", "--redis-url");
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
fn a_redis_url_is_checked_before_it_reaches_the_client_library() {
    for (url, what) in [
        ("redis://:s3cret@127.0.0.1:99999", "port 99999 is not"),
        ("redis://:s3cret@127.0.0.1:0", "port 0"),
        ("redis://:s3cret@:6379", "no host"),
        ("redis://:s3cret@127.0.0.1:6379/x", "database \"x\""),
        (
            "redis://:s3cret@127.0.0.1:6379?node=10.0.0.2:7000",
            "Cluster seed",
        ),
        (
            "redis-cluster://:s3cret@10.0.0.1:7000?node=10.0.0.2",
            "node=10.0.0.2 is not",
        ),
        (
            "redis-cluster://:s3cret@10.0.0.1:7000?node=h:99999",
            "node=h:99999 is not",
        ),
    ] {
        let err = refusal(&[("REDIS_URL", url)], "REDIS_URL", "--redis-url");
        assert!(err.contains(what), "{url}: {err}");
        assert!(!err.contains("s3cret"), "the password is repeated: {err}");
        if what.contains("port") {
            assert!(err.contains("within 1..=65535"), "what to write: {err}");
        }
    }
    let err = refusal(
        &[("DATABASE_URL", "postgres://u:s3cret@127.0.0.1:99999/db")],
        "DATABASE_URL",
        "--database-url",
    );
    assert!(err.contains("port 99999"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
}

#[test]
fn a_value_that_does_not_parse_names_the_variable_set() {
    let err = refusal(
        &[("GATEWAY_GLOBAL_BURST", "abc")],
        "GATEWAY_GLOBAL_BURST",
        "--global-burst",
    );
    assert_eq!(
        err,
        "must be a whole number ≥ 0, got \"abc\"; write e.g. 100 (the default)"
    );
    let err = refusal(
        &[("GATEWAY_GLOBAL_BURST", "-5")],
        "GATEWAY_GLOBAL_BURST",
        "--global-burst",
    );
    assert!(
        err.starts_with("must be a whole number ≥ 0, got \"-5\""),
        "{err}"
    );
    let err = refusal(
        &[("GATEWAY_MAX_BATCH", "-1")],
        "GATEWAY_MAX_BATCH",
        "--max-batch",
    );
    assert!(err.starts_with("must be a whole number ≥ 1"), "{err}");
    let err = refusal(
        &[("GATEWAY_LOG_FORMAT", "xml")],
        "GATEWAY_LOG_FORMAT",
        "--log-format",
    );
    assert!(
        err.starts_with("must be text or json, got \"xml\""),
        "{err}"
    );
    // Given as a flag, the flag is what was wrong.
    let exit = Binary::run(&[("GATEWAY_GLOBAL_BURST", "5")], &["--global-burst", "x"]);
    assert!(!exit.status.success());
    let err = in_form(&exit.stderr, "GATEWAY_GLOBAL_BURST", "--global-burst");
    assert!(err.contains("got \"x\" from --global-burst"), "{err}");
}

#[test]
fn each_invalid_setting_is_named_alone() {
    // Zero where only a positive number makes sense.
    for var in [
        "GATEWAY_MAX_BATCH",
        "GATEWAY_BODY_LIMIT",
        "GATEWAY_REDIS_POOL_SIZE",
        "GATEWAY_GLOBAL_COUNT",
        "GATEWAY_GLOBAL_PERIOD",
        "GATEWAY_HEADER_TIMEOUT_MS",
        "GATEWAY_IDLE_TIMEOUT_MS",
        "GATEWAY_WRITE_TIMEOUT_MS",
        "GATEWAY_REQUEST_TIMEOUT_MS",
        "GATEWAY_STORE_TIMEOUT_MS",
        "GATEWAY_MAX_CONNECTIONS",
        "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS",
        "GATEWAY_CHECKIN_RETENTION_DAYS",
        "GATEWAY_UV_RETENTION_DAYS",
        "GATEWAY_GEO_RETENTION_DAYS",
        "GATEWAY_DEDUP_RETENTION_DAYS",
        "GATEWAY_GEO_MAX_PLACES",
        "GATEWAY_DEDUP_CAPACITY",
        "GATEWAY_SECKILL_MAX_ORDERS",
        "GATEWAY_QUEUE_MAX_JOBS",
        "GATEWAY_MAX_ITEM_BYTES",
        "GATEWAY_RATELIMIT_MAX_TTL_S",
        "GATEWAY_LEDGER_CLAIM_IDLE_MS",
        "GATEWAY_WORKERS",
        "GATEWAY_WRITE_REPLICAS_TIMEOUT_MS",
    ] {
        let flag = format!(
            "--{}",
            var["GATEWAY_".len()..].to_lowercase().replace('_', "-")
        );
        let err = refused(&[(var, "0")]);
        let what = in_form(&err, var, &flag);
        assert!(what.contains("got \"0\""), "{var}: {err}");
        assert_eq!(
            err.matches("GATEWAY_").count(),
            1,
            "{var}=0 names other settings too: {err}"
        );
    }
}

#[test]
fn each_kind_of_invalid_value_is_named_alone() {
    // Out of range, not a number, an address, a zone, a CIDR, a prefix, a switch.
    for (var, value, what) in [
        ("GATEWAY_CHECKIN_RETENTION_DAYS", "3661", "from 1 to 3660"),
        ("GATEWAY_UV_RETENTION_DAYS", "5000", "from 1 to 3660"),
        ("GATEWAY_GEO_RETENTION_DAYS", "4294967296", "to 4294967295"),
        ("GATEWAY_REQUEST_TIMEOUT_MS", "1.5", "whole number"),
        ("GATEWAY_DEDUP_ERROR_RATE", "1", "above 0 and below 1"),
        ("GATEWAY_DEDUP_ERROR_RATE", "1e-15", "at least"),
        ("GATEWAY_DEDUP_CAPACITY", "1000000000", "MiB"),
        ("GATEWAY_LISTEN", "localhost:8080", "an IP address and port"),
        ("GATEWAY_TZ", "Mars/Olympus", "IANA time zone"),
        (
            "GATEWAY_TRUSTED_PROXIES",
            "10.0.0.0/8,10.0.0.0/33",
            "\"10.0.0.0/33\"",
        ),
        ("GATEWAY_KEY_PREFIX", "{gw}", "brace"),
        ("GATEWAY_GLOBAL_FAIL", "maybe", "open or closed"),
        ("GATEWAY_GLOBAL_LIMIT", "yes", "on, off or shadow"),
        ("GATEWAY_ACCESS_LOG", "true", "on or off"),
    ] {
        let err = refused(&[(var, value)]);
        let rest = in_form(&err, var, &flag(var));
        assert!(rest.contains(what), "{var}={value}: {err}");
        assert_eq!(err.matches("GATEWAY_").count(), 1, "{var}={value}: {err}");
    }
}

#[test]
fn a_cors_origin_is_written_as_browsers_send_it() {
    for (origin, what, write) in [
        (
            "http://127.0.0.1:18500/",
            "trailing slash",
            "http://127.0.0.1:18500",
        ),
        ("localhost:3000", "no scheme", "http://localhost:3000"),
        (
            "https://App.example.com:443",
            "as browsers send it",
            "https://app.example.com",
        ),
        (
            "http://app.example/index.html?x=1",
            "a path",
            "http://app.example",
        ),
    ] {
        let err = refusal(
            &[(
                "GATEWAY_CORS_ORIGINS",
                &format!("http://ok.example,{origin}"),
            )],
            "GATEWAY_CORS_ORIGINS",
            "--cors-origins",
        );
        assert!(err.contains(what), "{origin}: {err}");
        assert!(err.ends_with(&format!(": {write}")), "{origin}: {err}");
    }
    let err = refusal(
        &[("GATEWAY_CORS_ORIGINS", "*,http://app.example")],
        "GATEWAY_CORS_ORIGINS",
        "--cors-origins",
    );
    assert!(err.contains("write * alone"), "{err}");
}

#[test]
fn a_short_secret_is_refused_without_being_repeated() {
    for (var, flag, value, at_least) in [
        (
            "GATEWAY_UV_VISITOR_KEY",
            "--uv-visitor-key",
            "guessable",
            16,
        ),
        ("GATEWAY_ADMIN_TOKEN", "--admin-token", "t", 16),
        (
            "GATEWAY_ADMIN_TOKEN",
            "--admin-token",
            "guessable-token",
            16,
        ),
        (
            "GATEWAY_JWT_SECRET",
            "--jwt-secret",
            "guessable-but-not-32-b",
            32,
        ),
    ] {
        let err = refusal(&[(var, value)], var, flag);
        assert!(
            err.starts_with(&format!(
                "must be at least {at_least} bytes, got {}",
                value.len()
            )),
            "{err}"
        );
        assert!(err.contains("openssl rand"), "what to write: {err}");
        if value.len() > 1 {
            assert!(!err.contains(value), "the secret is repeated: {err}");
        }
    }
}

#[test]
fn a_port_in_use_names_the_listen_setting() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let err = refusal(&[("GATEWAY_LISTEN", &addr)], "GATEWAY_LISTEN", "--listen");
    assert!(
        err.starts_with(&format!("cannot listen on {addr}: ")),
        "{err}"
    );
    assert!(err.contains("another port"), "what to write: {err}");
    drop(taken);
}

#[test]
fn a_file_a_setting_names_is_refused_in_the_same_form() {
    let dir = std::env::temp_dir().join(format!("startup-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.toml").display().to_string();
    let garbage = dir.join("garbage.toml");
    std::fs::write(&garbage, "[[client]]\nid = \"x\"\nkey_sha256 = \n").unwrap();
    let garbage = garbage.display().to_string();
    for (var, flag) in [
        ("GATEWAY_CLIENTS_FILE", "--clients-file"),
        ("GATEWAY_POLICIES_FILE", "--policies-file"),
        ("GATEWAY_JWT_PUBLIC_KEY_FILE", "--jwt-public-key-file"),
    ] {
        let err = refusal(&[(var, &missing)], var, flag);
        assert!(
            err.starts_with(&format!("cannot read {missing}: No such file")),
            "{err}"
        );
        let err = refusal(&[(var, &garbage)], var, flag);
        assert!(err.contains("garbage.toml") || err.contains("key"), "{err}");
    }
    // Where the file is wrong, on one line.
    let err = refusal(
        &[("GATEWAY_CLIENTS_FILE", &garbage)],
        "GATEWAY_CLIENTS_FILE",
        "--clients-file",
    );
    assert!(err.contains("garbage.toml: line 3: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn write_replicas_need_redis() {
    // The embedded backend has no replicas to wait for: refused in one line, not ignored.
    let err = refusal(
        &[("GATEWAY_WRITE_REPLICAS", "1")],
        "GATEWAY_WRITE_REPLICAS",
        "--write-replicas",
    );
    assert!(err.starts_with("is 1, "), "{err}");
    assert!(err.contains("REDIS_URL"), "what to do: {err}");
    let exit = Binary::run(&[], &["--write-replicas", "2"]);
    assert!(!exit.status.success());
    let err = in_form(&exit.stderr, "GATEWAY_WRITE_REPLICAS", "--write-replicas");
    assert!(err.starts_with("is 2, "), "{err}");
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
    let (client, gw_ref) = (&client, &gw);
    let healthz = poll::eventually(BOUND, "the port answers", || async move {
        client.get(gw_ref.url("/healthz")).send().await.ok()
    })
    .await;
    eprintln!(
        "/healthz answered {:?} after the spawn, Redis down",
        spawned.elapsed()
    );
    assert_eq!(healthz.status(), 200);

    // Why, once fred's first attempt was refused (at once: nothing listens on the port).
    let ready = poll::eventually(
        BOUND,
        "/readyz says the connection was refused",
        || async move {
            let r = client.get(gw_ref.url("/readyz")).send().await.unwrap();
            assert_eq!(r.status(), 503);
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["code"], "backend_unavailable", "{body}");
            (body["reason"] == "connection_refused").then_some(body)
        },
    )
    .await;
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
    let within = Duration::from_secs(30);
    poll::eventually(
        within,
        "the API serves after Redis started",
        || async move {
            let r = client
                .post(gw_ref.url("/v1/uv/home"))
                .json(&json!({"visitor": "v1"}))
                .send()
                .await
                .unwrap();
            if r.status() != 200 {
                assert_eq!(r.status(), 503);
            }
            (r.status() == 200).then_some(())
        },
    )
    .await;
    assert_eq!(
        client.get(gw.url("/readyz")).send().await.unwrap().status(),
        200
    );
}
