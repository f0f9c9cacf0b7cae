//! The abuse budget (API.md "Clients and abuse", README "Abuse budget"): for each kind of
//! resource an anonymous request can create, drive its worst case against a private
//! `redis-server` for a few thousand requests, read Redis's `used_memory` before and after, and
//! turn the growth into what one client at the default global budget (50 units/s, the route's
//! cost in units per request) could add per hour. Every kind must stay under 256 MiB per
//! client-hour; `cargo test --test abuse_budget -- --nocapture` prints the README table.

#[path = "common/mod.rs"]
mod common;

use futures::stream::{self, StreamExt};
use redis_gateway::config::StoreChoice;
use redis_gateway::middleware::costs;
use serde_json::{json, Value};

use common::{Backend, Gateway, RedisProcess};

/// The default global budget: units per second (GATEWAY_GLOBAL_COUNT / GATEWAY_GLOBAL_PERIOD).
const UNITS_PER_SECOND: f64 = 50.0;
/// The default burst: no request is charged more (costs are capped at it).
const BURST: u64 = 100;
/// Requests in flight: enough to fill Redis, few enough that a year-long merge queued behind
/// others on a loaded 2-core machine stays inside the store timeout.
const IN_FLIGHT: usize = 4;
/// The goal of issue 15, per client-hour.
const MIB_PER_HOUR_CAP: f64 = 256.0;

/// One request of a worst case: method, path with query, the route template it matches, body.
struct Req {
    method: &'static str,
    path: String,
    route: &'static str,
    body: Option<Value>,
}

fn post(path: String, route: &'static str, body: Value) -> Req {
    Req {
        method: "POST",
        path,
        route,
        body: Some(body),
    }
}

fn used_memory(redis: &RedisProcess) -> f64 {
    let info = redis.cli(&["info", "memory"]).expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// Sends `reqs` (`IN_FLIGHT` at a time) and returns the units charged, or the first failure.
async fn drive(gw: &Gateway, reqs: Vec<Req>) -> Result<u64, String> {
    let units = stream::iter(reqs)
        .map(|r| async move {
            let body = r.body.as_ref().map(|b| serde_json::to_vec(b).unwrap());
            let query = r.path.split_once('?').map(|(_, q)| q);
            let charge = costs::cost(
                r.method,
                r.route,
                query,
                Some(body.as_ref().map_or(0, |b| b.len() as u64)),
                body.as_deref(),
                BURST,
            );
            let costs::Charge::Units(cost) = charge else {
                panic!("{} {}: {charge:?}", r.method, r.path);
            };
            let mut req = gw
                .client
                .request(r.method.parse().unwrap(), gw.url(&r.path));
            if let Some(b) = body {
                req = req
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {}", common::ADMIN_TOKEN))
                    .body(b);
            }
            let (status, reply) = gw.send(req).await;
            (
                cost,
                status
                    .is_success()
                    .then_some(())
                    .ok_or(format!("{} {}: {status} {reply}", r.method, r.path)),
            )
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let failed: Vec<&String> = units.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
    match failed.first() {
        Some(first) => Err(format!("{} requests failed, e.g. {first}", failed.len())),
        None => Ok(units.iter().map(|(c, _)| c).sum()),
    }
}

/// Keys with no TTL, but for the two that are bounded without one: the cohort chunk registry
/// (at most 4,096 chunk numbers) and what an admin's voucher owns (`sk:`, `skr:`).
fn keys_without_expiry(redis: &RedisProcess) -> Vec<String> {
    let script = "local out = {} for _, k in ipairs(redis.call('KEYS', '*')) do \
                  if redis.call('TTL', k) == -1 then out[#out + 1] = k end end return out";
    let out = redis.cli(&["eval", script, "0"]).unwrap_or_default();
    out.lines()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .filter(|k| {
            let kind = k.split_once(':').map_or("", |(_, rest)| rest);
            !(kind.starts_with("ckr:") || kind.starts_with("sk:") || kind.starts_with("skr:"))
        })
        .map(str::to_owned)
        .collect()
}

/// Redis's own record of calls slower than 5 ms (`slowlog-log-slower-than 5000` below).
fn slow_calls(redis: &RedisProcess) -> String {
    redis.cli(&["slowlog", "get", "5"]).unwrap_or_default()
}

/// Runs `setup` (not measured), then the worst case `reqs`, on a fresh Redis; returns
/// (bytes per unit, MiB per client-hour) and prints the table row.
async fn measure(kind: &str, setup: Vec<Req>, reqs: Vec<Req>) -> f64 {
    let redis = RedisProcess::start(&["--slowlog-log-slower-than", "5000"], false);
    let mut settings = common::settings(Backend::Redis);
    settings.store = StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(settings).await;
    drive(&gw, setup).await.expect("setup");
    let before = used_memory(&redis);
    let requests = reqs.len();
    let units = drive(&gw, reqs).await;
    let slow = slow_calls(&redis);
    let units = units.unwrap_or_else(|e| panic!("{kind}: {e}; Redis's slow log: {slow}"));
    let lasting = keys_without_expiry(&redis);
    assert!(
        lasting.is_empty(),
        "{kind}: keys that never expire: {lasting:?}"
    );
    let grown = (used_memory(&redis) - before).max(0.0);
    let per_unit = grown / units as f64;
    let per_hour = per_unit * UNITS_PER_SECOND * 3600.0 / (1024.0 * 1024.0);
    println!(
        "| {kind} | {requests} requests, {units} units | {:.0} B | {per_hour:.1} MiB |",
        grown / requests as f64
    );
    assert!(
        per_hour <= MIB_PER_HOUR_CAP,
        "{kind}: {per_unit:.0} bytes per unit = {per_hour:.0} MiB per client-hour at the default budget"
    );
    per_hour
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkins_in_sparse_chunks() {
    // Each user is the last id of a chunk nobody else uses: a new month key and a new chunk.
    let reqs = (0..3000u64)
        .map(|k| {
            let user = (k << 20) | 0xF_FFFF;
            post(
                format!("/v1/checkins/{user}"),
                "/v1/checkins/{user_id}",
                json!({}),
            )
        })
        .collect();
    measure("check-in, a new cohort chunk per user", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkins_that_turn_chunks_into_bitmaps() {
    // 520 users spread over the top of each chunk: past the sparse limit, a whole bitmap.
    let reqs = (0..6u64)
        .flat_map(|k| (0..520u64).map(move |i| (k << 20) | (0xF_FFFF - i * 7)))
        .map(|user| {
            post(
                format!("/v1/checkins/{user}"),
                "/v1/checkins/{user_id}",
                json!({}),
            )
        })
        .collect();
    measure(
        "check-in, chunks filled past the sparse limit",
        vec![],
        reqs,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_one_visitor_on_new_pages() {
    let reqs = (0..3000)
        .map(|i| {
            post(
                format!("/v1/uv/p{i}"),
                "/v1/uv/{page}",
                json!({"visitor": "v"}),
            )
        })
        .collect();
    measure("UV add, a new page per request", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_dense_pages() {
    // A page-day's HyperLogLog turns dense (12 KiB) past 3,000 sparse bytes, ~1,600 visitors:
    // more than one batch holds, so the cheapest way is a full batch of short visitors and a
    // small second one.
    let full: Vec<String> = (0..1000).map(|i| format!("{i}")).collect();
    let more: Vec<String> = (1000..2000).map(|i| format!("{i}")).collect();
    let reqs = (0..150)
        .flat_map(|i| {
            [&full, &more].map(|batch| {
                post(
                    format!("/v1/uv/d{i}"),
                    "/v1/uv/{page}",
                    json!({ "visitors": batch }),
                )
            })
        })
        .collect();
    measure("UV add, a dense page-day per request", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_merges_of_dense_sources_into_new_pages() {
    // 20 dense sources on each of 8 days (the most one merge may fold at the default burst),
    // then merges into new pages over those days.
    let visitors: Vec<String> = (0..1000).map(|i| format!("{i}")).collect();
    let day = |d: i64| {
        (chrono::Utc::now() - chrono::Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    // Two batches per source-day: past 3,000 sparse bytes, so every source is dense.
    let more: Vec<String> = (1000..2000).map(|i| format!("{i}")).collect();
    let setup = (0..20)
        .flat_map(|s| (0..8).map(move |d| (s, d)))
        .flat_map(|(s, d)| {
            [&visitors, &more].map(|batch| {
                post(
                    format!("/v1/uv/src{s}"),
                    "/v1/uv/{page}",
                    json!({ "visitors": batch, "date": day(d) }),
                )
            })
        })
        .collect();
    let sources: Vec<String> = (0..20).map(|s| format!("src{s}")).collect();
    let reqs = (0..40)
        .map(|i| {
            post(
                "/v1/uv/merge".to_owned(),
                "/v1/uv/merge",
                json!({"sources": sources, "into": format!("m{i}"), "from": day(7), "to": day(0)}),
            )
        })
        .collect();
    measure("UV merge, dense sources into a new page", setup, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_batches_into_new_layers() {
    let reqs = (0..100)
        .map(|l| {
            let places: Vec<Value> = (0..1000)
                .map(|i| json!({"member": format!("{i}"), "lon": 116.0 + f64::from(i) * 1e-4, "lat": 39.9}))
                .collect();
            post(format!("/v1/geo/l{l}"), "/v1/geo/{layer}", json!({ "places": places }))
        })
        .collect();
    measure("geo, batches of places with short names", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_places_with_long_names() {
    let long = "x".repeat(120);
    let reqs = (0..3000)
        .map(|i| Req {
            method: "PUT",
            path: format!("/v1/geo/long/{long}{i:08}"),
            route: "/v1/geo/{layer}/{member}",
            body: Some(json!({"lon": 116.0, "lat": 39.9})),
        })
        .collect();
    measure("geo, one place with a 128-character name", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_filters_created_on_first_use() {
    let reqs = (0..3000)
        .map(|i| {
            post(
                format!("/v1/dedup/f{i}/items"),
                "/v1/dedup/{filter}/items",
                json!({"items": ["a"]}),
            )
        })
        .collect();
    measure("dedup, a new filter per request", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_growing_filter() {
    let reqs = (0..200)
        .map(|r| {
            let items: Vec<String> = (0..1000).map(|i| format!("{r}.{i}")).collect();
            post(
                "/v1/dedup/grow/items".to_owned(),
                "/v1/dedup/{filter}/items",
                json!({ "items": items }),
            )
        })
        .collect();
    measure("dedup, one filter grown with new items", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_keys() {
    let reqs = (0..3000)
        .map(|i| {
            post(
                "/v1/ratelimit/check".to_owned(),
                "/v1/ratelimit/check",
                json!({"key": format!("k{i}"), "max_burst": 1_000_000, "count_per_period": 1,
                       "period": 31_536_000, "quantity": 1_000_000}),
            )
        })
        .collect();
    measure("rate-limit check, a new key per request", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seckill_orders() {
    let now = chrono::Utc::now();
    let setup = vec![Req {
        method: "PUT",
        path: "/v1/seckill/vouchers/big".to_owned(),
        route: "/v1/seckill/vouchers/{voucher_id}",
        body: Some(
            json!({"stock": 100_000, "begin": (now - chrono::Duration::hours(1)).to_rfc3339(),
                          "end": (now + chrono::Duration::hours(1)).to_rfc3339()}),
        ),
    }];
    let reqs = (0..3000u64)
        .map(|u| {
            post(
                "/v1/seckill/vouchers/big/orders".to_owned(),
                "/v1/seckill/vouchers/{voucher_id}/orders",
                json!({"user_id": 4_000_000_000u64 + u}),
            )
        })
        .collect();
    measure("seckill purchase (stock set by an admin)", setup, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_sliding_logs() {
    // The most units one request may store at the default burst, on a new year-long log each.
    let reqs = (0..60)
        .map(|i| {
            post(
                "/v1/ratelimit/check".to_owned(),
                "/v1/ratelimit/check",
                json!({"algorithm": "sliding_window", "key": format!("s{i}"),
                       "count_per_period": 10_000, "period": 31_536_000, "quantity": 799}),
            )
        })
        .collect();
    measure(
        "rate-limit check, sliding_window, a new log per request",
        vec![],
        reqs,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_fixed_windows() {
    let reqs = (0..3000)
        .map(|i| {
            post(
                "/v1/ratelimit/check".to_owned(),
                "/v1/ratelimit/check",
                json!({"algorithm": "fixed_window", "key": format!("f{i}"),
                       "count_per_period": 1_000_000, "period": 31_536_000, "quantity": 1}),
            )
        })
        .collect();
    measure(
        "rate-limit check, fixed_window, a new key per request",
        vec![],
        reqs,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn locks_on_new_names() {
    let long = "x".repeat(120);
    let reqs = (0..3000)
        .map(|i| {
            post(
                format!("/v1/locks/{long}{i:08}"),
                "/v1/locks/{name}",
                json!({"owner": format!("{long}{i:08}"), "ttl_ms": 3_600_000}),
            )
        })
        .collect();
    measure(
        "lock acquire, a new 128-character name and owner per request",
        vec![],
        reqs,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_jobs() {
    // Near the 64 KiB payload cap, on new queues: the stored bytes follow the body.
    let payload = "x".repeat(60 * 1024);
    let reqs = (0..200)
        .map(|i| {
            post(
                format!("/v1/queues/q{}/jobs", i % 20),
                "/v1/queues/{queue}/jobs",
                json!({ "payload": payload, "delay_ms": 3_600_000 }),
            )
        })
        .collect();
    measure("queue enqueue, 60 KiB payloads", vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queue_small_jobs_on_new_queues() {
    let reqs = (0..3000)
        .map(|i| {
            post(
                format!("/v1/queues/s{i}/jobs"),
                "/v1/queues/{queue}/jobs",
                json!({ "payload": 1 }),
            )
        })
        .collect();
    measure("queue enqueue, a small job on a new queue", vec![], reqs).await;
}
