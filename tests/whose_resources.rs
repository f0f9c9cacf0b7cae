//! Whose resources (docs/clients.md "Who may do what"): rate-limit keys, locks, queues and
//! idempotency keys belong to the caller that names them — with a clients file, each API client
//! (and each anonymous address, when anonymous callers may use them) has its own; a lock's token is
//! never shown to a `GET`; a rate-limit key cannot be made to outlive
//! `GATEWAY_RATELIMIT_MAX_TTL_S`. On every backend.

mod common;

use common::{clients_file, settings, Backend, Gateway};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A gateway with two API clients, `web` and `ios`, behind a trusted proxy (this host), so a
/// test names an anonymous caller's address with `X-Forwarded-For`.
async fn gateway(backend: Backend, anonymous_backend_routes: bool) -> Gateway {
    let mut s = settings(backend);
    s.clients_file = Some(clients_file(&[
        ("web", "web-secret", None),
        ("ios", "ios-secret", None),
    ]));
    s.anonymous_backend_routes = anonymous_backend_routes;
    s.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    Gateway::with_settings(s).await
}

/// Who sends a request: an API key, or an anonymous address.
#[derive(Clone, Copy)]
enum As {
    Key(&'static str),
    Address(&'static str),
}

async fn call(
    gw: &Gateway,
    who: As,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    idempotency_key: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = gw.client.request(method, gw.url(path));
    req = match who {
        As::Key(key) => req.header("x-api-key", key),
        As::Address(ip) => req.header("x-forwarded-for", ip),
    };
    if let Some(body) = body {
        req = req.json(&body);
    }
    if let Some(key) = idempotency_key {
        req = req.header("idempotency-key", key);
    }
    gw.send(req).await
}

async fn post(gw: &Gateway, who: As, path: &str, body: Value) -> (StatusCode, Value) {
    call(gw, who, reqwest::Method::POST, path, Some(body), None).await
}

async fn get(gw: &Gateway, who: As, path: &str) -> (StatusCode, Value) {
    call(gw, who, reqwest::Method::GET, path, None, None).await
}

const WEB: As = As::Key("web-secret");
const IOS: As = As::Key("ios-secret");

fn check(key: &str) -> Value {
    json!({"key": key, "max_burst": 0, "count_per_period": 1, "period": 60})
}

async fn backend_routes_need_an_api_key_with_a_clients_file(backend: Backend) {
    let gw = gateway(backend, false).await;
    let anonymous = As::Address("203.0.113.7");
    for (path, body) in [
        ("/v1/ratelimit/check", check("k")),
        ("/v1/locks/report", json!({"owner": "w", "ttl_ms": 10_000})),
        ("/v1/queues/mail/jobs", json!({"payload": 1})),
        ("/v1/queues/mail/claim", json!({})),
    ] {
        let (status, body) = post(&gw, anonymous, path, body).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
            "{path}: {body}"
        );
    }
    assert_eq!(get(&gw, anonymous, "/v1/locks/report").await.0, 401);
    assert_eq!(get(&gw, anonymous, "/v1/queues/mail").await.0, 401);
    // The other routes stay open to anonymous callers.
    assert_eq!(
        post(&gw, anonymous, "/v1/uv/home", json!({"visitor": "a"}))
            .await
            .0,
        200
    );
}

async fn rate_limit_keys_are_each_callers_own(backend: Backend) {
    let gw = gateway(backend, true).await;
    let path = "/v1/ratelimit/check";
    let (_, first) = post(&gw, WEB, path, check("user:42:login")).await;
    assert_eq!(first["allowed"], true);
    let (_, again) = post(&gw, WEB, path, check("user:42:login")).await;
    assert_eq!(again["allowed"], false, "web spent its key");
    let (_, other) = post(&gw, IOS, path, check("user:42:login")).await;
    assert_eq!(
        other["allowed"], true,
        "ios's key of the same name is its own"
    );
    // Anonymous callers (allowed here) have a namespace per address.
    let a = As::Address("203.0.113.7");
    let b = As::Address("198.51.100.9");
    assert_eq!(
        post(&gw, a, path, check("user:42:login")).await.1["allowed"],
        true
    );
    assert_eq!(
        post(&gw, a, path, check("user:42:login")).await.1["allowed"],
        false
    );
    assert_eq!(
        post(&gw, b, path, check("user:42:login")).await.1["allowed"],
        true
    );
}

async fn a_rate_limit_key_cannot_outlive_the_configured_ttl(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let path = "/v1/ratelimit/check";
    // The probe's million-year key: refused, nothing stored.
    let frozen = json!({"key": "user:42:login", "max_burst": 1_000_000, "count_per_period": 1,
        "period": 31_536_000, "quantity": 1_000_000});
    let (status, body) = gw.post(path, frozen).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_argument")),
        "{body}"
    );
    let (_, check) = gw
        .post(
            path,
            json!({"key": "user:42:login", "max_burst": 0, "count_per_period": 1, "period": 1}),
        )
        .await;
    assert_eq!(check["allowed"], true, "the key was left alone: {check}");
    // A full bucket of exactly a day is fine (the default cap), a second more is not.
    let day = json!({"key": "d", "max_burst": 23, "count_per_period": 1, "period": 3600});
    assert_eq!(gw.post(path, day).await.0, 200);
    let longer = json!({"key": "d2", "max_burst": 24, "count_per_period": 1, "period": 3600});
    assert_eq!(gw.post(path, longer).await.0, 400);
    for algorithm in ["sliding_window", "fixed_window"] {
        let year = json!({"algorithm": algorithm, "key": "w", "count_per_period": 1, "period": 31_536_000});
        assert_eq!(gw.post(path, year).await.0, 400, "{algorithm}");
        let day =
            json!({"algorithm": algorithm, "key": "w", "count_per_period": 1, "period": 86_400});
        assert_eq!(gw.post(path, day).await.0, 200, "{algorithm}");
    }
}

async fn locks_are_each_callers_own_and_never_show_their_token(backend: Backend) {
    let gw = gateway(backend, false).await;
    let (status, lock) = post(
        &gw,
        WEB,
        "/v1/locks/report:daily",
        json!({"owner": "worker-7", "ttl_ms": 30_000}),
    )
    .await;
    assert_eq!(status, 200, "{lock}");
    let token = lock["token"]
        .as_u64()
        .expect("the acquisition carries the token");

    let (_, seen) = get(&gw, WEB, "/v1/locks/report:daily").await;
    assert_eq!(
        (seen["held"].as_bool(), seen["owner"].as_str()),
        (Some(true), Some("worker-7"))
    );
    assert!(
        seen.get("token").is_none(),
        "a GET never shows the token: {seen}"
    );

    // ios names the same lock: it is not web's.
    let (_, theirs) = get(&gw, IOS, "/v1/locks/report:daily").await;
    assert_eq!(theirs["held"], false, "{theirs}");
    let release = format!("/v1/locks/report:daily?owner=worker-7&token={token}");
    let (status, body) = call(&gw, IOS, reqwest::Method::DELETE, &release, None, None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (StatusCode::CONFLICT, Some("lock_lost"))
    );
    let renew = json!({"owner": "worker-7", "token": token, "ttl_ms": 60_000});
    let (status, _) = post(&gw, IOS, "/v1/locks/report:daily/renew", renew).await;
    assert_eq!(status, 409);
    let (status, _) = post(
        &gw,
        IOS,
        "/v1/locks/report:daily",
        json!({"owner": "ios-worker", "ttl_ms": 30_000}),
    )
    .await;
    assert_eq!(status, 200, "ios's own lock of that name is free");

    // web's lock is untouched, and web may release it.
    let (_, seen) = get(&gw, WEB, "/v1/locks/report:daily").await;
    assert_eq!(seen["owner"], "worker-7");
    let (status, _) = call(&gw, WEB, reqwest::Method::DELETE, &release, None, None).await;
    assert_eq!(status, 204);
}

async fn queues_are_each_callers_own(backend: Backend) {
    let gw = gateway(backend, false).await;
    let job = json!({"payload": {"reset_token": "s3cret"}});
    let (status, enqueued) = post(&gw, WEB, "/v1/queues/mail/jobs", job).await;
    assert_eq!(status, 201, "{enqueued}");
    assert_eq!(
        enqueued["queue"], "mail",
        "the caller's own name comes back"
    );
    let (_, stats) = get(&gw, IOS, "/v1/queues/mail").await;
    assert_eq!(stats["ready"], 0, "{stats}");
    let (status, claimed) = post(&gw, IOS, "/v1/queues/mail/claim", json!({"max": 10})).await;
    assert_eq!(status, 200);
    assert_eq!(claimed["jobs"], json!([]), "ios never sees web's jobs");
    let (_, claimed) = post(&gw, WEB, "/v1/queues/mail/claim", json!({"max": 10})).await;
    assert_eq!(claimed["jobs"][0]["payload"]["reset_token"], "s3cret");
}

async fn idempotency_keys_are_each_callers_own(backend: Backend) {
    let gw = gateway(backend, true).await;
    let path = "/v1/uv/home";
    let key = Some("shared-key-1");
    let (status, first) = call(
        &gw,
        WEB,
        reqwest::Method::POST,
        path,
        Some(json!({"visitor": "a"})),
        key,
    )
    .await;
    assert_eq!((status, first["pv"].as_u64()), (StatusCode::OK, Some(1)));
    // ios sends the same key string with another body: its own key, so no 422 telling it
    // the key was used, and its visit counts.
    let (status, other) = call(
        &gw,
        IOS,
        reqwest::Method::POST,
        path,
        Some(json!({"visitor": "b"})),
        key,
    )
    .await;
    assert_eq!(
        (status, other["pv"].as_u64()),
        (StatusCode::OK, Some(2)),
        "{other}"
    );
    // Each caller's own retry still replays.
    let (status, again) = call(
        &gw,
        WEB,
        reqwest::Method::POST,
        path,
        Some(json!({"visitor": "a"})),
        key,
    )
    .await;
    assert_eq!(
        (status, again["pv"].as_u64()),
        (StatusCode::OK, Some(1)),
        "{again}"
    );
}

/// Users sharing a back end (one API client) or an address each have their own keys on the
/// routes that act for a user.
async fn a_users_purchase_key_is_that_users(backend: Backend) {
    let gw = gateway(backend, false).await;
    let now = chrono::Utc::now();
    let voucher = json!({"stock": 10, "begin": (now - chrono::Duration::hours(1)).to_rfc3339(),
        "end": (now + chrono::Duration::hours(1)).to_rfc3339(), "per_user_limit": 1});
    assert_eq!(
        gw.admin_put("/v1/seckill/vouchers/v1", voucher).await.0,
        201
    );
    let path = "/v1/seckill/vouchers/v1/orders";
    let key = Some("order-attempt-1");
    let (status, first) = call(
        &gw,
        WEB,
        reqwest::Method::POST,
        path,
        Some(json!({"user_id": 50})),
        key,
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let (status, other) = call(
        &gw,
        WEB,
        reqwest::Method::POST,
        path,
        Some(json!({"user_id": 51})),
        key,
    )
    .await;
    assert_eq!(status, 201, "user 51's key is not user 50's: {other}");
    assert_ne!(first["order_id"], other["order_id"]);
}

contract_tests!(
    backend_routes_need_an_api_key_with_a_clients_file,
    rate_limit_keys_are_each_callers_own,
    a_rate_limit_key_cannot_outlive_the_configured_ttl,
    locks_are_each_callers_own_and_never_show_their_token,
    queues_are_each_callers_own,
    idempotency_keys_are_each_callers_own,
    a_users_purchase_key_is_that_users,
);
