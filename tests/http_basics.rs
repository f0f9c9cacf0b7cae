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
    // An id that could forge fields in a text log line is replaced, not echoed.
    let r = gw
        .client
        .get(gw.url("/healthz"))
        .header("x-request-id", "abc status=500")
        .send()
        .await
        .unwrap();
    let id = r.headers()["x-request-id"].to_str().unwrap();
    assert_eq!(
        id.len(),
        36,
        "a generated UUID instead of the forged id: {id}"
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

/// No user-controlled name reaches a key unvalidated: on every route with a name in its path,
/// braces, spaces, newlines, slashes-encoded, non-ASCII and 129 characters are a 400.
#[tokio::test]
async fn bad_names_are_refused_on_every_route() {
    let gw = Gateway::start(Backend::Memory).await;
    let long = "n".repeat(129);
    let bad = [
        "a%7Bb%7D",
        "a%20b",
        "a%0Ab",
        "%C3%A9",
        "a%2Fb",
        "%7B%7D",
        long.as_str(),
    ];
    let json = serde_json::json!({});
    for name in bad {
        let routes: Vec<(reqwest::Method, String)> = vec![
            (reqwest::Method::GET, format!("/v1/dedup/{name}")),
            (reqwest::Method::PUT, format!("/v1/dedup/{name}")),
            (reqwest::Method::POST, format!("/v1/dedup/{name}/items")),
            (reqwest::Method::POST, format!("/v1/dedup/{name}/check")),
            (reqwest::Method::POST, format!("/v1/dedup/{name}/filter")),
            (reqwest::Method::POST, format!("/v1/geo/{name}")),
            (
                reqwest::Method::GET,
                format!("/v1/geo/{name}/nearby?lon=1&lat=1&radius=1"),
            ),
            (
                reqwest::Method::GET,
                format!("/v1/geo/{name}/distance?from=a&to=b"),
            ),
            (reqwest::Method::GET, format!("/v1/geo/{name}/m")),
            (reqwest::Method::GET, format!("/v1/geo/layer/{name}")),
            (reqwest::Method::PUT, format!("/v1/geo/layer/{name}")),
            (reqwest::Method::DELETE, format!("/v1/geo/layer/{name}")),
            (reqwest::Method::GET, format!("/v1/seckill/vouchers/{name}")),
            (reqwest::Method::PUT, format!("/v1/seckill/vouchers/{name}")),
            (
                reqwest::Method::POST,
                format!("/v1/seckill/vouchers/{name}/restock"),
            ),
            (
                reqwest::Method::GET,
                format!("/v1/seckill/vouchers/{name}/orders"),
            ),
            (
                reqwest::Method::POST,
                format!("/v1/seckill/vouchers/{name}/orders"),
            ),
            (
                reqwest::Method::GET,
                format!("/v1/seckill/vouchers/{name}/orders/1"),
            ),
            (reqwest::Method::GET, format!("/v1/uv/{name}")),
            (reqwest::Method::POST, format!("/v1/uv/{name}")),
            (
                reqwest::Method::GET,
                format!("/v1/uv?pages={name}&from=2026-01-01&to=2026-01-02"),
            ),
        ];
        for (method, path) in routes {
            let req = gw
                .client
                .request(method.clone(), gw.url(&path))
                .bearer_auth(common::ADMIN_TOKEN)
                .json(&json);
            let (status, body) = gw.send(req).await;
            assert_eq!(status, 400, "{method} {path}: {body}");
            assert_eq!(body["code"], "invalid_argument", "{method} {path}");
        }
    }
    let (status, _) = gw
        .post(
            "/v1/ratelimit/check",
            serde_json::json!({"key": "a b", "max_burst": 1, "count_per_period": 1, "period": 1}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn invented_methods_share_one_metric_label() {
    let gw = Gateway::start(Backend::Memory).await;
    for i in 0..20 {
        let method = reqwest::Method::from_bytes(format!("M{i}X").as_bytes()).unwrap();
        let r = gw
            .client
            .request(method, gw.url("/v1/checkins/1"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 405);
    }
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
        !metrics.contains(r#"method="M"#),
        "a label per invented method"
    );
    assert!(metrics.contains(r#"method="other""#));
}

/// The recorder keeps every latency sample until an upkeep folds it into its buckets; a
/// gateway nobody scrapes must still run one, or it grows with every request.
#[tokio::test]
async fn the_metrics_recorder_runs_its_own_upkeep() {
    let _gw = Gateway::start(Backend::Memory).await;
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        .collect();
    assert!(
        names.iter().any(|n| n == "metrics-upkeep"),
        "threads: {names:?}"
    );
}

/// Reserved names are 400 wherever a name is accepted (path, query, body), never a 404; and
/// JSON fields take only their declared type (`"7"` is not the number 7).
#[tokio::test]
async fn reserved_names_and_mistyped_fields_are_400_everywhere() {
    let gw = Gateway::start(Backend::Memory).await;
    let (status, _) = gw
        .put("/v1/geo/L/x", serde_json::json!({"lon": 1.0, "lat": 2.0}))
        .await;
    assert_eq!(status, 201);
    for path in [
        "/v1/geo/L/nearby?member=nearby&radius=1",
        "/v1/geo/L/nearby?member=distance&radius=1",
        "/v1/geo/L/distance?from=nearby&to=x",
        "/v1/geo/L/distance?from=x&to=distance",
        "/v1/uv?pages=home,merge&from=2026-01-01&to=2026-01-02",
    ] {
        let (status, problem) = gw.get(path).await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{path}: {problem}"
        );
    }
    for (path, body) in [
        (
            "/v1/geo/L",
            serde_json::json!({"places": [{"member": "nearby", "lon": 1.0, "lat": 2.0}]}),
        ),
        (
            "/v1/uv/merge",
            serde_json::json!({"sources": ["merge"], "into": "b", "from": "2026-01-01", "to": "2026-01-01"}),
        ),
        (
            "/v1/seckill/vouchers/v/orders",
            serde_json::json!({"user_id": "7"}),
        ),
        (
            "/v1/ratelimit/check",
            serde_json::json!({"key": "k", "max_burst": "5", "count_per_period": 1, "period": 1}),
        ),
        (
            "/v1/geo/L",
            serde_json::json!({"places": [{"member": "m", "lon": "1", "lat": 2.0}]}),
        ),
        ("/v1/uv/home", serde_json::json!({"visitor": 7})),
    ] {
        let (status, problem) = gw.post(path, body.clone()).await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{path} {body}: {problem}"
        );
    }
}

/// Every body is a JSON object: an array that serde could read field by field in order is
/// refused, whichever way the body is read (a plain `application/json`, another JSON content
/// type, a body that may be left out), and nothing is done.
#[tokio::test]
async fn an_array_in_place_of_a_body_object_is_400() {
    let gw = Gateway::start(Backend::Memory).await;
    for (path, content_type, body) in [
        (
            "/v1/locks/arr",
            "application/json",
            r#"["worker-7", 30000, 0]"#,
        ),
        (
            "/v1/locks/arr",
            "application/json;charset=UTF-8",
            r#" ["worker-7", 30000]"#,
        ),
        ("/v1/checkins/7", "application/json", "[\"2026-01-02\"]"),
        ("/v1/queues/arr/claim", "application/json", "[1]"),
    ] {
        let (status, problem) = gw
            .send(
                gw.client
                    .post(gw.url(path))
                    .header("content-type", content_type)
                    .body(body),
            )
            .await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{path} {content_type} {body}: {problem}"
        );
    }
    let (_, lock) = gw.get("/v1/locks/arr").await;
    assert_eq!(lock["held"], false, "{lock}");
    // The same fields as an object are accepted, on both ways of reading.
    for content_type in ["application/json", "application/json;charset=UTF-8"] {
        let (status, body) = gw
            .send(
                gw.client
                    .post(gw.url("/v1/locks/arr"))
                    .header("content-type", content_type)
                    .body(r#"{"owner": "worker-7", "ttl_ms": 30000}"#),
            )
            .await;
        assert_eq!(status, 200, "{content_type}: {body}");
    }
}

/// The two routes whose body may be left out still want a JSON content type when a body is
/// sent (415, as every other route), and a lock release takes only its two parameters.
#[tokio::test]
async fn an_optional_body_without_a_content_type_is_415_and_release_takes_no_stray_parameters() {
    let gw = Gateway::start(Backend::Memory).await;
    for path in ["/v1/checkins/7", "/v1/queues/ct/claim"] {
        let (status, problem) = gw
            .send(gw.client.post(gw.url(path)).body(r#"{"max": 1}"#))
            .await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (415, Some("unsupported_media_type")),
            "{path}: {problem}"
        );
        // No body at all is still the defaults.
        let (status, body) = gw.send(gw.client.post(gw.url(path))).await;
        assert!(status.is_success(), "{path}: {status} {body}");
    }
    let (_, lock) = gw
        .post(
            "/v1/locks/q",
            serde_json::json!({"owner": "a", "ttl_ms": 30000}),
        )
        .await;
    let token = &lock["token"];
    let (status, problem) = gw
        .delete(&format!("/v1/locks/q?owner=a&token={token}&force=1"))
        .await;
    assert_eq!(
        (status.as_u16(), problem["code"].as_str()),
        (400, Some("invalid_argument")),
        "{problem}"
    );
    assert_eq!(gw.get("/v1/locks/q").await.1["held"], true);
    let (status, _) = gw
        .delete(&format!("/v1/locks/q?owner=a&token={token}"))
        .await;
    assert_eq!(status, 204);
}

/// Every API route refuses a query parameter it does not take, as `400 invalid_argument`
/// naming it: the routes that take none as well as those that take some (docs/api.md
/// "Requests and replies"). Swept over every `/v1` operation of the OpenAPI document, with
/// path parameters that are valid, so that only the query can be what is refused.
#[tokio::test]
async fn every_api_route_refuses_an_unknown_query_parameter() {
    let gw = Gateway::start(Backend::Memory).await;
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let valid = |param: &str| match param {
        "user_id" => "7",
        "date" => "2026-01-02",
        "policy" => "global",
        "identity" => "203.0.113.7",
        _ => "x",
    };
    let mut swept = Vec::new();
    for (template, ops) in doc["paths"].as_object().unwrap() {
        if !template.starts_with("/v1/") {
            continue;
        }
        let mut path = template.clone();
        while let Some(start) = path.find('{') {
            let end = start + path[start..].find('}').unwrap();
            let value = valid(&path[start + 1..end]);
            path.replace_range(start..=end, value);
        }
        for method in ops.as_object().unwrap().keys() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let url = gw.url(&format!("{path}?zzz=1"));
            let req = gw
                .client
                .request(method.clone(), url)
                .bearer_auth(common::ADMIN_TOKEN);
            let (status, problem) = gw.send(req).await;
            assert_eq!(
                (status.as_u16(), problem["code"].as_str()),
                (400, Some("invalid_argument")),
                "{method} {path}?zzz=1: {problem}"
            );
            assert!(
                problem["detail"].as_str().unwrap().contains("`zzz`"),
                "{method} {path}: the detail names the parameter: {problem}"
            );
            swept.push(format!("{method} {template}"));
        }
    }
    assert!(swept.len() >= 40, "{swept:?}");
    // An empty query is no parameter; the routes that take parameters still take theirs; the
    // ops and document routes are left as they were.
    for (path, status) in [
        ("/v1/seckill/vouchers/x/orders/7?", 404),
        ("/v1/checkins/7?month=2026-01", 200),
        ("/v1/admin/policies?limit=1", 200),
        ("/healthz?zzz=1", 200),
        ("/readyz?zzz=1", 200),
        ("/openapi.json?zzz=1", 200),
    ] {
        let req = gw.client.get(gw.url(path)).bearer_auth(common::ADMIN_TOKEN);
        let (got, body) = gw.send(req).await;
        assert_eq!(got, status, "{path}: {body}");
    }
}

/// An optional body field sent as `null` is the field left out: its default applies, on every
/// domain whose bodies have optional fields (docs/api.md "Requests and replies").
#[tokio::test]
async fn null_is_an_omitted_optional_field_in_every_body() {
    use serde_json::json;
    let gw = Gateway::start(Backend::Memory).await;
    let admin = |method: reqwest::Method, path: &str, body: serde_json::Value| {
        gw.client
            .request(method, gw.url(path))
            .bearer_auth(common::ADMIN_TOKEN)
            .json(&body)
    };
    use reqwest::Method;
    for (method, path, body, status) in [
        (Method::POST, "/v1/checkins/7", json!({"date": null}), 200),
        (
            Method::POST,
            "/v1/uv/home",
            json!({"visitor": "v", "visitors": null, "date": null}),
            200,
        ),
        (
            Method::PUT,
            "/v1/seckill/vouchers/v",
            json!({"stock": 5, "begin": "2020-01-01T00:00:00Z", "end": "2100-01-01T00:00:00Z", "per_user_limit": null}),
            201,
        ),
        (
            Method::POST,
            "/v1/ratelimit/check",
            json!({"key": "k", "algorithm": null, "max_burst": 4, "count_per_period": 1, "period": 60, "quantity": null}),
            200,
        ),
        (
            Method::POST,
            "/v1/dedup/f/filter",
            json!({"items": ["a"], "mark_seen": null}),
            200,
        ),
        (
            Method::POST,
            "/v1/locks/l",
            json!({"owner": "o", "ttl_ms": 60_000, "wait_ms": null}),
            200,
        ),
        (
            Method::POST,
            "/v1/queues/q/jobs",
            json!({"payload": 1, "delay_ms": null, "run_at": null, "id": null, "max_attempts": null}),
            201,
        ),
        (
            Method::POST,
            "/v1/queues/q/claim",
            json!({"max": null, "visibility_ms": null, "wait_ms": null}),
            200,
        ),
        (
            Method::PUT,
            "/v1/admin/policies/global/overrides/203.0.113.7",
            json!({"burst": 1, "count": 1, "period": 1, "deny": null, "ttl_s": null}),
            201,
        ),
    ] {
        let (got, reply) = gw.send(admin(method.clone(), path, body.clone())).await;
        assert_eq!(got, status, "{method} {path} {body}: {reply}");
    }
    // The defaults applied: the check spent one unit, the filter recorded its item, the
    // voucher allows one order per user.
    let (_, check) = gw
        .post(
            "/v1/ratelimit/check",
            json!({"key": "k", "max_burst": 4, "count_per_period": 1, "period": 60, "quantity": 0}),
        )
        .await;
    assert_eq!(check["remaining"], 4, "{check}");
    let (_, seen) = gw.post("/v1/dedup/f/check", json!({"items": ["a"]})).await;
    assert_eq!(seen["results"][0]["seen"], true, "{seen}");
    let (_, voucher) = gw.get("/v1/seckill/vouchers/v").await;
    assert_eq!(voucher["per_user_limit"], 1, "{voucher}");
    // A required field is still required.
    let (got, problem) = gw
        .post("/v1/locks/l", json!({"owner": "o", "ttl_ms": null}))
        .await;
    assert_eq!(got, 400, "{problem}");
}
