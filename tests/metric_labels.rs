//! Metric labels are bounded: invented input adds no series. Its own test binary, since the
//! metrics recorder is process-wide and other tests' requests would add series of their own.

mod common;

use common::{Backend, Gateway};
use serde_json::json;

/// Invented methods, paths, names and keys must not add metric series: every label is
/// bounded.
#[tokio::test]
async fn metric_series_stay_fixed_under_invented_input() {
    let gw = Gateway::start(Backend::Memory).await;
    let series = |text: &str| {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count()
    };
    let drive = |round: u32| {
        let gw = &gw;
        async move {
            for i in 0..10 {
                let tag = format!("{round}x{i}");
                let m = reqwest::Method::from_bytes(format!("M{tag}").as_bytes()).unwrap();
                gw.client
                    .request(m, gw.url(&format!("/v1/uv/p{tag}")))
                    .send()
                    .await
                    .unwrap();
                gw.client
                    .get(gw.url(&format!("/nope/{tag}")))
                    .send()
                    .await
                    .unwrap();
                gw.client
                    .post(gw.url(&format!("/v1/uv/page-{tag}")))
                    .header("x-api-key", format!("key-{tag}"))
                    .json(&json!({"visitor": tag}))
                    .send()
                    .await
                    .unwrap();
                gw.client
                    .get(gw.url(&format!("/v1/checkins/{i}?month=2026-1{}", i % 3)))
                    .send()
                    .await
                    .unwrap();
            }
        }
    };
    let scrape = || async {
        gw.client
            .get(gw.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    drive(0).await;
    // Twice: a scrape is itself counted, after it renders.
    scrape().await;
    let before = series(&scrape().await);
    drive(1).await;
    drive(2).await;
    let after = scrape().await;
    assert_eq!(series(&after), before, "{after}");
    for raw in ["M1x", "/nope/", "page-1", "key-1"] {
        assert!(!after.contains(raw), "{raw} reached a label");
    }
    assert!(after.contains("gateway_http_requests_in_flight"));
    assert!(
        after.contains(r#"gateway_store_call_duration_seconds_count{op="checkins.months"}"#),
        "store calls are timed per operation: {after}"
    );
    for process in ["process_cpu_seconds_total", "process_resident_memory_bytes"] {
        assert!(after.contains(process), "{process} missing");
    }
}

/// The live streams are seen in `/metrics`: the streams open and the feeds (one store
/// subscription each) behind them, back to none when the clients leave.
#[tokio::test]
async fn open_streams_and_their_feeds_are_gauged() {
    let gw = Gateway::start(Backend::Memory).await;
    let scrape = || async {
        let text = gw.text("/metrics").await;
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
        };
        (
            value("gateway_event_streams_open"),
            value(r#"gateway_event_feeds{kind="page"}"#),
        )
    };
    let open = || async {
        let r = gw
            .client
            .get(gw.url("/v1/uv/home/events"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r
    };
    let (a, b) = (open().await, open().await);
    assert_eq!(
        scrape().await,
        (Some(2.0), Some(1.0)),
        "two streams, one feed"
    );
    drop((a, b));
    let left = std::time::Duration::from_secs(10);
    common::poll::eventually(left, "the streams and the feed end", || async {
        (scrape().await == (Some(0.0), Some(0.0))).then_some(())
    })
    .await;
}
