//! API clients (docs/api.md "Clients and abuse"): configured keys only, budgets per client,
//! `GET /v1/clients/me`, reloads without a restart.

mod common;

use std::time::Duration;

use common::{clients_file, settings, write_clients, Backend, Gateway};
use serde_json::Value;

async fn me(gw: &Gateway, key: Option<&str>) -> (u16, Value) {
    let mut req = gw.client.get(gw.url("/v1/clients/me"));
    if let Some(key) = key {
        req = req.header("x-api-key", key);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn limit_of(gw: &Gateway, key: &str) -> (u16, Option<String>) {
    let r = gw
        .client
        .get(gw.url("/v1/checkins/1/2026-01-01"))
        .header("x-api-key", key)
        .send()
        .await
        .unwrap();
    let limit = r
        .headers()
        .get("ratelimit-limit")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.status().as_u16(), limit)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_clients_have_their_own_budgets_and_others_are_refused() {
    let file = clients_file(&[
        ("web", "web-secret", Some((2, 1, 60))),
        ("ios", "ios-secret", None),
    ]);
    let mut s = settings(Backend::Memory);
    s.global.enabled = true;
    s.global.max_burst = 9;
    s.clients.file = Some(file.clone());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("web-secret"), "only digests are configured");
    let gw = Gateway::with_settings(s).await;

    let (status, body) = me(&gw, Some("web-secret")).await;
    assert_eq!(status, 200);
    assert_eq!(body["client"], "web");
    assert_eq!(body["limits"]["burst"], 2);
    let (_, body) = me(&gw, Some("ios-secret")).await;
    assert_eq!(
        (body["client"].as_str(), body["limits"]["burst"].as_u64()),
        (Some("ios"), Some(9)),
        "no limits of its own: the global ones"
    );
    let (status, body) = me(&gw, None).await;
    assert_eq!(status, 200);
    assert!(body["client"].is_null(), "anonymous");

    // web's own budget: 3 at once (the /me call above spent one), then refused, while ios
    // goes on.
    for _ in 0..2 {
        assert_eq!(
            limit_of(&gw, "web-secret").await,
            (200, Some("3".to_owned()))
        );
    }
    assert_eq!(limit_of(&gw, "web-secret").await.0, 429);
    assert_eq!(
        limit_of(&gw, "ios-secret").await,
        (200, Some("10".to_owned()))
    );

    // An invented key is 401 everywhere, never a fresh budget.
    for _ in 0..3 {
        let (status, body) = me(&gw, Some("invented")).await;
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
        assert_eq!(limit_of(&gw, "invented").await.0, 401);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_file_is_reloaded_and_a_bad_one_is_ignored() {
    let file = clients_file(&[("web", "web-secret", None)]);
    let mut s = settings(Backend::Memory);
    s.clients.file = Some(file.clone());
    let gw = Gateway::with_settings(s).await;
    assert_eq!(me(&gw, Some("late-secret")).await.0, 401);

    write_clients(
        &file,
        &[("web", "web-secret", None), ("late", "late-secret", None)],
    );
    common::poll::eventually(
        Duration::from_secs(20),
        "the change is picked up",
        || async { (me(&gw, Some("late-secret")).await.0 == 200).then_some(()) },
    )
    .await;

    // A file that does not parse leaves the clients as they were.
    std::fs::write(&file, "[[client]]\nid = \"broken\"\n").unwrap();
    // Real time: two looks of the gateway's own file watcher (every 2 s), which leaves no trace
    // of a refused file but its log.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(me(&gw, Some("late-secret")).await.1["client"], "late");
    assert_eq!(me(&gw, Some("web-secret")).await.1["client"], "web");
}

#[tokio::test]
async fn a_bad_clients_file_refuses_to_start() {
    let mut s = settings(Backend::Memory);
    let file = clients_file(&[]);
    std::fs::write(&file, "[[client]]\nid = \"x\"\nkey_sha256 = \"not hex\"\n").unwrap();
    s.clients.file = Some(file);
    let err = redis_gateway::build_state(s).await.unwrap_err().to_string();
    assert!(
        err.starts_with("invalid configuration: GATEWAY_CLIENTS_FILE (--clients-file): "),
        "{err}"
    );
    assert!(err.contains("64 hex"), "{err}");
    assert_eq!(err.matches("GATEWAY_CLIENTS_FILE").count(), 1, "{err}");
}
