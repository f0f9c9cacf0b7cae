//! End-user JWTs (docs/api.md "Clients and abuse"): on routes that act for one user, `sub` must be
//! that user (401 without a valid token, 403 for another user); the admin token may act for
//! anyone; routes that act for no one user are unaffected.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::{settings, Backend, Gateway};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use redis_gateway::config::{JwtKey, JwtSettings};
use serde_json::{json, Value};

const SECRET: &str = "a-test-secret-of-at-least-32-bytes!!";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(sub: &str) -> Value {
    json!({"sub": sub, "exp": now() + 600, "iss": "auth.example", "aud": "gateway"})
}

fn hs256(claims: &Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

async fn gateway(key: JwtKey) -> Gateway {
    gateway_with_leeway(key, 30).await
}

async fn gateway_with_leeway(key: JwtKey, leeway_s: u64) -> Gateway {
    let mut s = settings(Backend::Memory);
    s.admin_token = Some("the-admin-token".to_owned());
    s.jwt = Some(JwtSettings {
        key,
        issuer: Some("auth.example".to_owned()),
        audience: Some("gateway".to_owned()),
        leeway_s,
    });
    Gateway::with_settings(s).await
}

async fn send(
    gw: &Gateway,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = gw.client.request(method.parse().unwrap(), gw.url(path));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_user_token_acts_for_its_own_user_only() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    let alice = hs256(&claims("42"));

    // Its own user: writes and reads.
    assert_eq!(
        send(&gw, "POST", "/v1/checkins/42", Some(&alice), None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(&gw, "GET", "/v1/checkins/42", Some(&alice), None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(&gw, "GET", "/v1/checkins/42/2026-01-01", Some(&alice), None)
            .await
            .0,
        200
    );

    // Another user: 403 on every route that acts for a user.
    for (method, path, body) in [
        ("POST", "/v1/checkins/43", None),
        ("GET", "/v1/checkins/43", None),
        ("GET", "/v1/checkins/43/2026-01-01", None),
        (
            "POST",
            "/v1/seckill/vouchers/v1/orders",
            Some(json!({"user_id": 43})),
        ),
        ("GET", "/v1/seckill/vouchers/v1/orders/43", None),
    ] {
        let (status, body) = send(&gw, method, path, Some(&alice), body).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
    }

    // No token, a forged, expired, or foreign-issuer token: 401.
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &claims("42"),
        &EncodingKey::from_secret(b"another-secret-another-secret-xx"),
    )
    .unwrap();
    let mut expired = claims("42");
    expired["exp"] = json!(now() - 3600);
    let mut foreign = claims("42");
    foreign["iss"] = json!("evil.example");
    let mut other_audience = claims("42");
    other_audience["aud"] = json!("someone-else");
    // A configured issuer or audience is required: a token without the claim is refused
    // like one with a wrong value.
    let mut no_issuer = claims("42");
    no_issuer.as_object_mut().unwrap().remove("iss");
    let mut no_audience = claims("42");
    no_audience.as_object_mut().unwrap().remove("aud");
    for token in [
        Some(hs256(&no_issuer)),
        Some(hs256(&no_audience)),
        None,
        Some(forged),
        Some(hs256(&expired)),
        Some(hs256(&foreign)),
        Some(hs256(&other_audience)),
        Some("not-a-jwt".to_owned()),
    ] {
        let (status, body) = send(&gw, "POST", "/v1/checkins/42", token.as_deref(), None).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (401, Some("unauthorized")),
            "{token:?}"
        );
    }

    // The admin token acts for anyone.
    assert_eq!(
        send(
            &gw,
            "POST",
            "/v1/checkins/43",
            Some("the-admin-token"),
            None
        )
        .await
        .0,
        200
    );

    // Routes that act for no one user need no token.
    let (status, _) = send(
        &gw,
        "POST",
        "/v1/uv/home",
        None,
        Some(json!({"visitor": "v"})),
    )
    .await;
    assert_eq!(status, 200);
}

/// The `Bearer` scheme is case-insensitive (RFC 9110 §11.1), for user and admin tokens alike.
#[tokio::test]
async fn the_bearer_scheme_is_matched_in_any_case() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    let token = hs256(&claims("42"));
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        for (credential, user) in [(token.as_str(), 42), ("the-admin-token", 43)] {
            let status = gw
                .client
                .post(gw.url(&format!("/v1/checkins/{user}")))
                .header("authorization", format!("{scheme} {credential}"))
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(status, 200, "{scheme} {credential}");
        }
    }
    // Another scheme is not a bearer token.
    let status = gw
        .client
        .post(gw.url("/v1/checkins/42"))
        .header("authorization", format!("Basic {token}"))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);
}

#[tokio::test]
async fn purchases_need_the_buyers_token() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    let (status, _) = send(
        &gw,
        "PUT",
        "/v1/seckill/vouchers/jwt-v",
        Some("the-admin-token"),
        Some(json!({"stock": 5, "begin": "2020-01-01T00:00:00Z", "end": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 201);
    let bob = hs256(&claims("7"));
    let (status, _) = send(
        &gw,
        "POST",
        "/v1/seckill/vouchers/jwt-v/orders",
        Some(&bob),
        Some(json!({"user_id": 7})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = send(
        &gw,
        "POST",
        "/v1/seckill/vouchers/jwt-v/orders",
        None,
        Some(json!({"user_id": 8})),
    )
    .await;
    assert_eq!(status, 401);
    let (status, orders) = send(
        &gw,
        "GET",
        "/v1/seckill/vouchers/jwt-v/orders/7",
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(orders["orders"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn rs256_and_es256_tokens_verify_with_a_public_key() {
    for (alg, private, public) in [
        (
            Algorithm::RS256,
            "jwt-rs256-private.pem",
            "jwt-rs256-public.pem",
        ),
        (
            Algorithm::ES256,
            "jwt-es256-private.pem",
            "jwt-es256-public.pem",
        ),
    ] {
        let gw = gateway(JwtKey::PublicKeyPem(fixture(public))).await;
        let key = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&fixture(private)).unwrap(),
            _ => EncodingKey::from_ec_pem(&fixture(private)).unwrap(),
        };
        let token = encode(&Header::new(alg), &claims("5"), &key).unwrap();
        assert_eq!(
            send(&gw, "POST", "/v1/checkins/5", Some(&token), None)
                .await
                .0,
            200,
            "{alg:?}"
        );
        assert_eq!(
            send(&gw, "POST", "/v1/checkins/6", Some(&token), None)
                .await
                .0,
            403,
            "{alg:?}"
        );
        // The algorithm comes from the key: an HS256 token is refused even if signed with
        // the public key's bytes (the classic algorithm-confusion attack).
        let confused = encode(
            &Header::new(Algorithm::HS256),
            &claims("5"),
            &EncodingKey::from_secret(&fixture(public)),
        )
        .unwrap();
        assert_eq!(
            send(&gw, "POST", "/v1/checkins/5", Some(&confused), None)
                .await
                .0,
            401,
            "{alg:?}"
        );
    }
}

/// What `POST /v1/checkins/42` answers with a token for user 42 whose claims `edit` changes.
async fn check_in_with(gw: &Gateway, edit: impl FnOnce(&mut Value)) -> u16 {
    let mut c = claims("42");
    edit(&mut c);
    send(gw, "POST", "/v1/checkins/42", Some(&hs256(&c)), None)
        .await
        .0
}

#[tokio::test]
async fn not_before_is_honoured_within_the_leeway() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    // An hour ahead: not valid yet.
    assert_eq!(
        check_in_with(&gw, |c| c["nbf"] = json!(now() + 3600)).await,
        401
    );
    // Ahead by less than the 30 s leeway (a clock a little fast at the issuer), or past: valid.
    assert_eq!(
        check_in_with(&gw, |c| c["nbf"] = json!(now() + 10)).await,
        200
    );
    assert_eq!(
        check_in_with(&gw, |c| c["nbf"] = json!(now() - 10)).await,
        200
    );
    // Expired by less than the leeway: still valid; by more: not.
    assert_eq!(
        check_in_with(&gw, |c| c["exp"] = json!(now() - 10)).await,
        200
    );
    assert_eq!(
        check_in_with(&gw, |c| c["exp"] = json!(now() - 90)).await,
        401
    );
}

/// `GATEWAY_JWT_LEEWAY_S` is the leeway, both ways (not the JWT library's own 60 s).
#[tokio::test]
async fn the_clock_leeway_is_the_configured_one() {
    let tight = gateway_with_leeway(JwtKey::Secret(SECRET.to_owned()), 5).await;
    assert_eq!(
        check_in_with(&tight, |c| c["exp"] = json!(now() - 30)).await,
        401
    );
    assert_eq!(
        check_in_with(&tight, |c| c["nbf"] = json!(now() + 30)).await,
        401
    );
    assert_eq!(
        check_in_with(&tight, |c| c["exp"] = json!(now() + 30)).await,
        200
    );

    let loose = gateway_with_leeway(JwtKey::Secret(SECRET.to_owned()), 120).await;
    assert_eq!(
        check_in_with(&loose, |c| c["exp"] = json!(now() - 90)).await,
        200
    );
    assert_eq!(
        check_in_with(&loose, |c| c["nbf"] = json!(now() + 90)).await,
        200
    );
    assert_eq!(
        check_in_with(&loose, |c| c["exp"] = json!(now() - 180)).await,
        401
    );
}

/// A token marking header parameters critical (`crit`, RFC 7515 §4.1.11) must be refused by a
/// receiver that does not understand them, and the gateway understands none.
#[tokio::test]
async fn tokens_with_critical_header_parameters_are_refused() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    let with_crit = |crit: Option<Vec<&str>>| {
        let mut header = Header::new(Algorithm::HS256);
        header.crit = crit.map(|c| c.into_iter().map(str::to_owned).collect());
        encode(
            &header,
            &claims("42"),
            &EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .unwrap()
    };
    for crit in [
        Some(vec!["exp"]),
        Some(vec!["urn:example:unknown"]),
        Some(vec![]),
    ] {
        let token = with_crit(crit.clone());
        let (status, body) = send(&gw, "POST", "/v1/checkins/42", Some(&token), None).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (401, Some("unauthorized")),
            "crit {crit:?}"
        );
    }
    // The same token without `crit` is fine.
    let (status, _) = send(&gw, "POST", "/v1/checkins/42", Some(&with_crit(None)), None).await;
    assert_eq!(status, 200);
}

/// A voucher's order list names every buyer: with user tokens on, it is the admin's alone
/// (without them, open); one user's orders stay that user's (and the admin's).
#[tokio::test]
async fn with_tokens_only_the_admin_lists_a_vouchers_buyers() {
    let gw = gateway(JwtKey::Secret(SECRET.to_owned())).await;
    let (status, _) = send(
        &gw,
        "PUT",
        "/v1/seckill/vouchers/list-v",
        Some("the-admin-token"),
        Some(json!({"stock": 5, "begin": "2020-01-01T00:00:00Z", "end": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 201);
    let bob = hs256(&claims("7"));
    let alice = hs256(&claims("42"));
    let (status, _) = send(
        &gw,
        "POST",
        "/v1/seckill/vouchers/list-v/orders",
        Some(&bob),
        Some(json!({"user_id": 7})),
    )
    .await;
    assert_eq!(status, 201);

    let list = "/v1/seckill/vouchers/list-v/orders";
    for (token, want) in [
        (None, (401, Some("unauthorized"))),
        (Some("not-a-jwt"), (401, Some("unauthorized"))),
        (Some(bob.as_str()), (403, Some("forbidden"))),
        (Some(alice.as_str()), (403, Some("forbidden"))),
    ] {
        let (status, body) = send(&gw, "GET", list, token, None).await;
        assert_eq!((status, body["code"].as_str()), want, "{token:?}");
        assert!(body.get("orders").is_none(), "{body}");
    }
    let (status, page) = send(&gw, "GET", list, Some("the-admin-token"), None).await;
    assert_eq!(status, 200);
    assert_eq!(page["orders"][0]["user_id"], 7, "{page}");

    // One user's orders: that user's token or the admin's.
    let bobs = "/v1/seckill/vouchers/list-v/orders/7";
    assert_eq!(send(&gw, "GET", bobs, None, None).await.0, 401);
    assert_eq!(send(&gw, "GET", bobs, Some(&alice), None).await.0, 403);
    assert_eq!(send(&gw, "GET", bobs, Some(&bob), None).await.0, 200);
    assert_eq!(
        send(&gw, "GET", bobs, Some("the-admin-token"), None)
            .await
            .0,
        200
    );

    // Without token settings the back end authenticates its users itself: the list is open.
    let mut s = settings(Backend::Memory);
    s.admin_token = Some("the-admin-token".to_owned());
    let open = Gateway::with_settings(s).await;
    let (status, _) = send(
        &open,
        "PUT",
        "/v1/seckill/vouchers/open-v",
        Some("the-admin-token"),
        Some(json!({"stock": 5, "begin": "2020-01-01T00:00:00Z", "end": "2099-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 201);
    let buy = json!({"user_id": 7});
    let path = "/v1/seckill/vouchers/open-v/orders";
    assert_eq!(send(&open, "POST", path, None, Some(buy)).await.0, 201);
    let (status, page) = send(&open, "GET", path, None, None).await;
    assert_eq!(status, 200);
    assert_eq!(page["orders"][0]["user_id"], 7, "{page}");
}
