//! What operators and front ends see of the running binary: JSON and access logs, compressed
//! replies, bounded metric series.

mod common;

use std::process::Command;
use std::time::Duration;

use common::binary::Binary;
use common::{Backend, Gateway};
use serde_json::{json, Value};

#[tokio::test]
async fn json_logs_carry_one_access_line_per_request() {
    let gw = Binary::start(&[("GATEWAY_LOG_FORMAT", "json")]);
    let client = reqwest::Client::new();
    gw.wait_ready().await;
    let r = client
        .post(gw.url("/v1/checkins/42"))
        .header("x-request-id", "req-abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let line = gw.line(|l| l.contains("req-abc"));
    let entry: Value = serde_json::from_str(&line).expect("every line is one JSON object");
    assert_eq!(entry["level"], "INFO");
    assert_eq!(entry["target"], "access");
    assert_eq!(entry["method"], "POST");
    assert_eq!(entry["route"], "/v1/checkins/{user_id}");
    assert_eq!(entry["status"], 200);
    assert_eq!(entry["request_id"], "req-abc");
    assert_eq!(entry["client"], "ip:127.0.0.1");
    assert_eq!(entry["limiter"], "allowed");
    assert!(entry["latency_ms"].as_f64().unwrap() >= 0.0);
}

#[tokio::test]
async fn the_access_log_can_be_switched_off() {
    let mut gw = Binary::start(&[("GATEWAY_ACCESS_LOG", "off")]);
    let client = reqwest::Client::new();
    gw.wait_ready().await;
    for id in ["quiet-1", "quiet-2"] {
        client
            .get(gw.url("/healthz"))
            .header("x-request-id", id)
            .send()
            .await
            .unwrap();
    }
    // Only the access log mentions a request id at INFO: with it off, no line does.
    let seen: Vec<String> = gw.lines_at_exit();
    assert!(
        !seen.iter().any(|l| l.contains("quiet-")),
        "no access lines: {seen:?}"
    );
    assert!(
        seen.iter().any(|l| l.contains("serving on")),
        "other lines still come: {seen:?}"
    );
}

/// The access line is written by the gateway itself (not through `tracing`'s formatter), yet
/// it obeys `RUST_LOG` as any `access` INFO event would, and reads as the text format prints.
#[tokio::test]
async fn access_lines_obey_rust_log() {
    let client = reqwest::Client::new();
    let mut hidden = Binary::start(&[("RUST_LOG", "info,access=off")]);
    hidden.wait_ready().await;
    client
        .get(hidden.url("/healthz"))
        .header("x-request-id", "hidden-1")
        .send()
        .await
        .unwrap();
    let seen: Vec<String> = hidden.lines_at_exit();
    assert!(!seen.iter().any(|l| l.contains("hidden-1")), "{seen:?}");
    assert!(seen.iter().any(|l| l.contains("serving on")), "{seen:?}");

    let shown = Binary::start(&[("RUST_LOG", "warn,access=info")]);
    shown.wait_ready().await;
    client
        .get(shown.url("/healthz"))
        .header("x-request-id", "shown-1")
        .send()
        .await
        .unwrap();
    let line = shown.line(|l| l.contains("shown-1"));
    assert!(
        line.contains(" INFO request method=\"GET\" route=/healthz status=200 latency_ms="),
        "{line}"
    );
    assert!(
        line.ends_with(" request_id=shown-1 client=\"-\" limiter=\"-\" trace_id=\"-\""),
        "{line}"
    );
}

#[tokio::test]
async fn large_replies_are_compressed_as_negotiated() {
    let gw = Gateway::start(Backend::Memory).await;
    let items: Vec<String> = (0..500).map(|i| format!("news-item-{i:05}")).collect();
    let body = json!({ "items": items });
    // Without Accept-Encoding, the reply is plain; a client that decodes gets the same JSON.
    let raw = reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .build()
        .unwrap();
    let fetch = |client: reqwest::Client| {
        let (url, body) = (gw.url("/v1/dedup/compress/check"), body.clone());
        async move { client.post(url).json(&body).send().await.unwrap() }
    };
    let r = fetch(raw.clone()).await;
    assert!(r.headers().get("content-encoding").is_none());
    let plain: Value = r.json().await.unwrap();
    for encoding in ["gzip", "br", "zstd"] {
        let r = raw
            .post(gw.url("/v1/dedup/compress/check"))
            .header("accept-encoding", encoding)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["content-encoding"], encoding);
        let size = r.bytes().await.unwrap().len();
        let plain_size = serde_json::to_vec(&plain).unwrap().len();
        assert!(size * 3 < plain_size, "{encoding}: {size} of {plain_size}");
    }
    let decoded: Value = fetch(reqwest::Client::new()).await.json().await.unwrap();
    assert_eq!(decoded, plain);

    // Small replies stay plain.
    let r = raw
        .get(gw.url("/healthz"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("content-encoding").is_none());
}

/// `process_cpu_seconds_total` in fractions of a second, as the kernel counts it (ticks of
/// 10 ms): it used to be whole seconds, 0 until a full second of CPU was spent. Scraped until
/// the process has spent some CPU and the reading is not a whole number (a reading can fall on
/// one by chance), at most 200 times.
#[tokio::test]
async fn process_cpu_seconds_have_fractions() {
    let gw = Binary::start(&[]);
    gw.wait_ready().await;
    let mut readings = Vec::new();
    for _ in 0..200 {
        let scraped = reqwest::get(gw.url("/metrics")).await.unwrap();
        let text = scraped.text().await.unwrap();
        let value: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("process_cpu_seconds_total "))
            .expect("process_cpu_seconds_total is exported")
            .trim()
            .parse()
            .unwrap();
        if value > 0.0 && value.fract() != 0.0 {
            return;
        }
        readings.push(value);
    }
    panic!("never a fraction of a second: {readings:?}");
}

// Several threads: the check below blocks one while the in-process gateway answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_healthcheck_subcommand_tells_up_from_down() {
    let gw = Gateway::start(Backend::Memory).await;
    let run = |listen: String| {
        Command::new(env!("CARGO_BIN_EXE_redis-gateway"))
            .arg("healthcheck")
            .env("GATEWAY_LISTEN", listen)
            .output()
            .unwrap()
    };
    let up = run(format!("0.0.0.0:{}", gw.addr.port()));
    assert!(up.status.success(), "{up:?}");
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let down = run(format!("127.0.0.1:{port}"));
    assert_eq!(down.status.code(), Some(1), "{down:?}");
    assert!(String::from_utf8_lossy(&down.stderr).contains("unhealthy"));
}

/// Traces over OTLP/HTTP to a real receiver this test runs: the caller's `traceparent` is
/// continued, the request and its store call arrive as spans of that trace, and the trace id
/// is echoed in the access log and in problem documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_reach_an_otlp_receiver() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ExportTraceServiceRequest>();
    let receiver = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(ExportTraceServiceRequest::decode(body).expect("OTLP protobuf"));
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });

    let gw = Binary::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_SERVICE_NAME", "gw-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("GATEWAY_LOG_FORMAT", "json"),
    ]);
    let client = reqwest::Client::new();
    gw.wait_ready().await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let traceparent = format!("00-{trace}-00f067aa0ba902b7-01");
    let r = client
        .post(gw.url("/v1/uv/traced"))
        .header("traceparent", &traceparent)
        .header("x-request-id", "traced-1")
        .json(&json!({"visitor": "v1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let problem: Value = client
        .post(gw.url("/v1/uv/traced"))
        .header("traceparent", &traceparent)
        .json(&json!({"visitor": ""}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(problem["status"], 400);
    assert_eq!(problem["trace_id"], trace, "{problem}");
    let access: Value = serde_json::from_str(&gw.line(|l| l.contains("traced-1"))).unwrap();
    assert_eq!(access["trace_id"], trace);

    // Spans arrive in batches; collect until both the request and its store call are in.
    let mut spans = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !(spans
        .iter()
        .any(|(n, _, _): &(String, String, String)| n == "POST /v1/uv/{page}")
        && spans.iter().any(|(n, _, _)| n == "uv.record"))
    {
        let batch = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("spans within 20 s")
            .unwrap();
        for resource in batch.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.as_ref())
                .map(|v| format!("{:?}", v.value))
                .unwrap_or_default();
            assert!(service.contains("gw-under-test"), "{service}");
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let trace_id: String =
                        span.trace_id.iter().map(|b| format!("{b:02x}")).collect();
                    let parent: String = span
                        .parent_span_id
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    spans.push((span.name, trace_id, parent));
                }
            }
        }
    }
    let request = spans
        .iter()
        .find(|(n, _, _)| n == "POST /v1/uv/{page}")
        .unwrap();
    assert_eq!(request.1, trace, "the caller's trace is continued");
    assert_eq!(request.2, "00f067aa0ba902b7", "under the caller's span");
    let store = spans.iter().find(|(n, _, _)| n == "uv.record").unwrap();
    assert_eq!(store.1, trace, "the store call belongs to the same trace");
}
