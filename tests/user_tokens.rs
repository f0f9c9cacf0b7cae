//! End-user JWTs (API.md "Clients and abuse"): on routes that act for one user, `sub` must be
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
    let mut s = settings(Backend::Memory);
    s.admin_token = Some("the-admin-token".to_owned());
    s.jwt = Some(JwtSettings {
        key,
        issuer: Some("auth.example".to_owned()),
        audience: Some("gateway".to_owned()),
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
    for token in [
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
