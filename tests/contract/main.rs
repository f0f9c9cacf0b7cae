//! The HTTP contract suite: every scenario runs against the memory backend, a real
//! `redis-server` and a real 3-master Redis Cluster (see `common`).

#[path = "../common/mod.rs"]
mod common;

mod checkins;
mod dedup;
mod events;
mod geo;
mod inventory;
mod locks;
mod queues;
mod ratelimit;
mod ratelimit_windows;
mod seckill;
mod uv;

use reqwest::Method;
use serde_json::{json, Value};

use common::{clients_file, settings, Backend, Gateway};

/// The OpenAPI document the gateway serves.
/// Keyed repeats sent at once, as `(status, replayed, body)`: exactly one was applied, and every
/// reply is that one's, with `status`.
fn applied_once(replies: &[(u16, bool, Value)], status: u16) {
    let fresh: Vec<_> = replies
        .iter()
        .filter(|(_, replayed, _)| !replayed)
        .collect();
    assert_eq!(fresh.len(), 1, "one outcome under the key: {replies:?}");
    for (s, _, reply) in replies {
        assert_eq!(
            (*s, reply),
            (status, &fresh[0].2),
            "every repeat replays it: {replies:?}"
        );
    }
}

async fn served_document(gw: &Gateway) -> Value {
    let (status, doc) = gw.get("/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    doc
}

/// The bounds the contract gives `schema`'s `field` are the ones the served OpenAPI document
/// states (`minimum`, `maximum`: a client generated from it must not send what the gateway
/// refuses) and the ones the gateway holds to: `body(value)` sent as `method path` (with the
/// admin token) is accepted at each bound and `400 invalid_argument` one past it.
async fn documented_bounds_hold(
    gw: &Gateway,
    (method, path): (Method, &str),
    schema: &str,
    field: &str,
    (min, max): (u64, Option<u64>),
    body: impl Fn(Value) -> Value,
) {
    let doc = served_document(gw).await;
    let documented = &doc["components"]["schemas"][schema]["properties"][field];
    assert_eq!(
        (
            documented["minimum"].as_u64(),
            documented["maximum"].as_u64()
        ),
        (Some(min), max),
        "{schema}.{field} as documented: {documented}"
    );
    let request = |value: Value| {
        gw.client
            .request(method.clone(), gw.url(path))
            .bearer_auth(common::ADMIN_TOKEN)
            .json(&body(value))
    };
    let mut past = vec![json!(i128::from(min) - 1)];
    past.extend(max.map(|max| json!(max + 1)));
    // The lower bound last: a lease renewed for 100 ms may be over before the next request.
    let bounds = max.into_iter().chain([min]);
    for value in bounds {
        let (status, reply) = gw.send(request(json!(value))).await;
        assert!(
            status.is_success(),
            "{schema}.{field} = {value}, a documented bound: {status} {reply}"
        );
    }
    for value in past {
        let (status, reply) = gw.send(request(value.clone())).await;
        assert_eq!(
            (status.as_u16(), reply["code"].as_str()),
            (400, Some("invalid_argument")),
            "{schema}.{field} = {value}, past a documented bound: {reply}"
        );
    }
}

/// With a clients file, a request whose `X-Api-Key` matches no client is `401 unauthorized` on
/// every operation under `prefix`, before anything else is looked at, and each of those
/// operations documents that 401 in the served OpenAPI document.
async fn unknown_api_keys_are_a_documented_401(backend: Backend, prefix: &str) {
    let mut s = settings(backend);
    s.clients.file = Some(clients_file(&[("web", "web-secret", None)]));
    let gw = Gateway::with_settings(s).await;
    let doc = served_document(&gw).await;
    let mut operations = 0;
    for (template, item) in doc["paths"].as_object().expect("paths") {
        if !template.starts_with(prefix) {
            continue;
        }
        let path = filled(&template.replace("{user_id}", "1"));
        for (method, operation) in item.as_object().expect("a path item") {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            if !operation.is_object() || operation.get("responses").is_none() {
                continue;
            }
            operations += 1;
            let id = &operation["operationId"];
            let request = gw
                .client
                .request(method.clone(), gw.url(&path))
                .header("x-api-key", "no-such-key")
                .json(&json!({}));
            let (status, reply) = gw.send(request).await;
            assert_eq!(
                (status.as_u16(), reply["code"].as_str()),
                (401, Some("unauthorized")),
                "{method} {path}: {reply}"
            );
            assert!(
                operation["responses"].get("401").is_some(),
                "{id} ({method} {template}) answers 401 to an unknown X-Api-Key, undocumented"
            );
        }
    }
    assert!(operations > 0, "no operation under {prefix}");
}

/// `template` with each `{param}` filled with a valid name.
fn filled(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').expect("a closed parameter") + open;
        out.push('x');
        rest = &rest[close + 1..];
    }
    out + rest
}
