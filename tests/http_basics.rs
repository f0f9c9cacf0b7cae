//! Cross-cutting HTTP behaviour: docs served offline, request ids, CORS, ops routes.

mod common;

use common::{Backend, Gateway};

#[tokio::test]
async fn swagger_ui_and_its_assets_come_from_the_gateway() {
    let gw = Gateway::start(Backend::Memory).await;
    let page = gw.client.get(gw.url("/swagger-ui/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no CDN references"
    );
    for asset in [
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-ui-standalone-preset.js",
        "swagger-initializer.js",
    ] {
        assert!(html.contains(asset), "{asset} referenced");
        let r = gw
            .client
            .get(gw.url(&format!("/swagger-ui/{asset}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{asset} served");
        assert!(r.bytes().await.unwrap().len() > 100);
    }
    let init = gw
        .client
        .get(gw.url("/swagger-ui/swagger-initializer.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(init.contains("/openapi.json"));

    let served: serde_json::Value = gw
        .client
        .get(gw.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let generated: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    assert_eq!(served, generated);
}

#[tokio::test]
async fn every_response_carries_a_request_id() {
    let gw = Gateway::start(Backend::Memory).await;
    let r = gw
        .client
        .post(gw.url("/v1/checkins/1"))
        .send()
        .await
        .unwrap();
    let id = r
        .headers()
        .get("x-request-id")
        .expect("generated id")
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    let r = gw
        .client
        .get(gw.url("/nope"))
        .header("x-request-id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.headers()["x-request-id"],
        "abc-123",
        "the client's id is echoed, errors included"
    );
}

#[tokio::test]
async fn cors_answers_preflight_and_exposes_limiter_headers() {
    let mut settings = common::settings(Backend::Memory);
    settings.cors_origins = vec!["https://app.example".to_owned()];
    let gw = Gateway::with_settings(settings).await;
    let r = gw
        .client
        .request(reqwest::Method::OPTIONS, gw.url("/v1/checkins/1"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type,x-api-key")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let r = gw
        .client
        .post(gw.url("/v1/checkins/1"))
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    let exposed = r.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for h in [
        "ratelimit",
        "ratelimit-policy",
        "ratelimit-remaining",
        "retry-after",
    ] {
        assert!(
            exposed.split(',').any(|e| e.trim() == h),
            "{h} exposed: {exposed}"
        );
    }
    let r = gw
        .client
        .post(gw.url("/v1/checkins/1"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn ops_routes() {
    let gw = Gateway::start(Backend::Memory).await;
    assert_eq!(gw.get("/healthz").await.0, 200);
    let (status, ready) = gw.get("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(ready["backend"], "memory");
    let metrics = gw.client.get(gw.url("/metrics")).send().await.unwrap();
    assert!(metrics.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
}
