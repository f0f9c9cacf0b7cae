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
    s.clients.file = Some(clients_file(&[
        ("web", "web-secret", None),
        ("ios", "ios-secret", None),
    ]));
    s.clients.anonymous_backend_routes = anonymous_backend_routes;
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
    // Every other route on them too, before the name or body is looked at.
    for (method, path, body) in [
        (
            reqwest::Method::POST,
            "/v1/locks/report/renew",
            Some(json!({"owner": "w", "token": 1, "ttl_ms": 10_000})),
        ),
        (
            reqwest::Method::DELETE,
            "/v1/locks/report?owner=w&token=1",
            None,
        ),
        (
            reqwest::Method::POST,
            "/v1/locks/bad%7Cname",
            Some(json!({})),
        ),
        (
            reqwest::Method::POST,
            "/v1/queues/mail/jobs/j1/ack",
            Some(json!({"receipt": "1.1"})),
        ),
        (reqwest::Method::DELETE, "/v1/queues/mail/jobs/j1", None),
        (reqwest::Method::GET, "/v1/queues/mail/dead", None),
    ] {
        let (status, body) = call(&gw, anonymous, method.clone(), path, body, None).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
            "{method} {path}: {body}"
        );
    }
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

/// No spelling of a name reaches another caller's lock: percent-encoding decodes to the
/// caller's own name, and a name carrying the namespace separator or hash-tag braces (the
/// store's `{<namespace>|<name>}`), encoded or not, is refused before the store. The longest
/// name works under the longest namespaces (an IPv6 /64's).
async fn no_spelling_of_a_name_reaches_another_callers_lock(backend: Backend) {
    let gw = gateway(backend, true).await;
    let (status, lock) = post(
        &gw,
        WEB,
        "/v1/locks/report:daily",
        json!({"owner": "w", "ttl_ms": 30_000}),
    )
    .await;
    assert_eq!(status, 200, "{lock}");
    let token = lock["token"].as_u64().unwrap();
    let others = [
        IOS,
        As::Address("203.0.113.7"),
        As::Address("::ffff:127.0.0.1"),
    ];
    for who in others {
        for name in ["report%3Adaily", "report%3adaily"] {
            let path = format!("/v1/locks/{name}");
            let (status, seen) = get(&gw, who, &path).await;
            assert_eq!(
                (status, &seen["held"]),
                (StatusCode::OK, &json!(false)),
                "{path}"
            );
        }
        for name in [
            "c:web%7Creport:daily",
            "c%3Aweb%7Creport%3Adaily",
            "%7Bc:web%7Creport:daily%7D",
            "report:daily%7D",
            "report%253Adaily",
            "report:daily%00",
            "report:daily%20",
        ] {
            let path = format!("/v1/locks/{name}");
            assert_eq!(get(&gw, who, &path).await.0, 400, "{path}");
            let release = format!("{path}?owner=w&token={token}");
            let (status, _) = call(&gw, who, reqwest::Method::DELETE, &release, None, None).await;
            assert_eq!(status, 400, "{release}");
            let renew = json!({"owner": "w", "token": token, "ttl_ms": 60_000});
            let (status, _) = post(&gw, who, &format!("{path}/renew"), renew).await;
            assert_eq!(status, 400, "{path}/renew");
        }
    }
    let (_, seen) = get(&gw, WEB, "/v1/locks/report:daily").await;
    assert_eq!((&seen["held"], &seen["owner"]), (&json!(true), &json!("w")));

    let long = format!("/v1/locks/{}", "n".repeat(128));
    for who in [WEB, As::Address("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")] {
        let (status, lock) = post(&gw, who, &long, json!({"owner": "w", "ttl_ms": 30_000})).await;
        assert_eq!(status, 200, "{lock}");
        let token = lock["token"].as_u64().unwrap();
        assert_eq!(get(&gw, who, &long).await.1["held"], true);
        let renew = json!({"owner": "w", "token": token, "ttl_ms": 60_000});
        assert_eq!(post(&gw, who, &format!("{long}/renew"), renew).await.0, 200);
        let release = format!("{long}?owner=w&token={token}");
        let (status, _) = call(&gw, who, reqwest::Method::DELETE, &release, None, None).await;
        assert_eq!(status, 204);
    }
}

/// Another caller naming the same queue and job ids acks, cancels, lists and enqueues in its
/// own queue: web's receipt acks nothing there, web's job ids are unknown there (404, and an
/// enqueue with one is new, not `200` existing), and web's dead jobs are not in its list.
async fn another_caller_cannot_ack_cancel_or_list_a_callers_jobs(backend: Backend) {
    let gw = gateway(backend, true).await;
    let jobs = "/v1/queues/mail/jobs";
    let job = |id: &str, max_attempts: u32| json!({"payload": id, "id": id, "max_attempts": max_attempts});
    assert_eq!(post(&gw, WEB, jobs, job("doomed", 1)).await.0, 201);
    let claim = json!({"max": 1, "visibility_ms": 1_000});
    let (_, claimed) = post(&gw, WEB, "/v1/queues/mail/claim", claim.clone()).await;
    assert_eq!(claimed["jobs"][0]["id"], "doomed", "{claimed}");
    gw.pass(std::time::Duration::from_millis(1_100)).await;
    // Its one attempt used: the next claim moves it to the dead list.
    assert_eq!(post(&gw, WEB, jobs, job("j1", 10)).await.0, 201);
    assert_eq!(post(&gw, WEB, jobs, job("j2", 10)).await.0, 201);
    let (_, claimed) = post(&gw, WEB, "/v1/queues/mail/claim", claim).await;
    assert_eq!(claimed["jobs"][0]["id"], "j1", "{claimed}");
    let receipt = claimed["jobs"][0]["receipt"].as_str().unwrap().to_owned();

    for who in [IOS, As::Address("203.0.113.7")] {
        let ack = post(
            &gw,
            who,
            "/v1/queues/mail/jobs/j1/ack",
            json!({"receipt": receipt}),
        )
        .await;
        assert_eq!(ack.0, 404, "{}", ack.1);
        let cancel = call(
            &gw,
            who,
            reqwest::Method::DELETE,
            "/v1/queues/mail/jobs/j2",
            None,
            None,
        )
        .await;
        assert_eq!(cancel.0, 404, "{}", cancel.1);
        let (status, dead) = get(&gw, who, "/v1/queues/mail/dead").await;
        assert_eq!((status, &dead["jobs"]), (StatusCode::OK, &json!([])));
        let (status, mine) = post(&gw, who, jobs, job("j2", 10)).await;
        assert_eq!(status, 201, "a job of its own, not web's: {mine}");
    }

    let (_, dead) = get(&gw, WEB, "/v1/queues/mail/dead").await;
    assert_eq!(dead["jobs"][0]["id"], "doomed", "{dead}");
    let ack = post(
        &gw,
        WEB,
        "/v1/queues/mail/jobs/j1/ack",
        json!({"receipt": receipt}),
    )
    .await;
    assert_eq!(ack.0, 204, "{}", ack.1);
    let (_, claimed) = post(&gw, WEB, "/v1/queues/mail/claim", json!({"max": 10})).await;
    assert_eq!(
        claimed["jobs"][0]["payload"], "j2",
        "web's j2 was left alone: {claimed}"
    );
}

/// One `Idempotency-Key` string sent by several callers on every keyed route they can share a
/// name on: each gets its own first reply, never another's replay (and never a 422 that would
/// tell it the key was used).
async fn no_caller_replays_anothers_key_on_any_route(backend: Backend) {
    let gw = gateway(backend, true).await;
    let now = chrono::Utc::now();
    let voucher = json!({"stock": 10, "begin": (now - chrono::Duration::hours(1)).to_rfc3339(),
        "end": (now + chrono::Duration::hours(1)).to_rfc3339(), "per_user_limit": 4});
    assert_eq!(
        gw.admin_put("/v1/seckill/vouchers/v2", voucher).await.0,
        201
    );
    let key = "the-same-key";
    let callers = [
        WEB,
        IOS,
        As::Address("203.0.113.7"),
        As::Address("198.51.100.9"),
    ];
    let mut orders = std::collections::HashSet::new();
    for (n, who) in callers.into_iter().enumerate() {
        for (path, body, status) in [
            ("/v1/ratelimit/check", check("login"), 200),
            ("/v1/queues/mail/jobs", json!({"payload": 1}), 201),
            (
                "/v1/seckill/vouchers/v2/orders",
                json!({"user_id": 50}),
                201,
            ),
            ("/v1/uv/home", json!({"visitor": "a"}), 200),
        ] {
            let r = gw
                .client
                .post(gw.url(path))
                .header("idempotency-key", key)
                .json(&body);
            let r = match who {
                As::Key(k) => r.header("x-api-key", k),
                As::Address(ip) => r.header("x-forwarded-for", ip),
            };
            let r = r.send().await.unwrap();
            let replayed = r.headers().contains_key("idempotency-replayed");
            let (got, reply) = (r.status().as_u16(), r.json::<Value>().await.unwrap());
            assert_eq!(
                (got, replayed),
                (status, false),
                "caller {n}, {path}: {reply}"
            );
            match path {
                "/v1/ratelimit/check" => assert_eq!(reply["allowed"], true, "caller {n}"),
                "/v1/uv/home" => assert_eq!(reply["pv"], n + 1, "caller {n}: {reply}"),
                "/v1/seckill/vouchers/v2/orders" => {
                    assert!(orders.insert(reply["order_id"].to_string()), "{reply}")
                }
                _ => {}
            }
        }
    }
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
    no_spelling_of_a_name_reaches_another_callers_lock,
    another_caller_cannot_ack_cancel_or_list_a_callers_jobs,
    no_caller_replays_anothers_key_on_any_route,
);
