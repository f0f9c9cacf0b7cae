//! The abuse budget (docs/api.md "Clients and abuse", docs/performance.md "Abuse budget"): for
//! each kind of resource an anonymous request can create, drive its worst case against a private
//! `redis-server` for a few thousand requests, read Redis's `used_memory` before and after, and
//! turn the growth into what one client at the default global budget (50 units/s, the route's
//! cost in units per request) could add per hour. Every kind must stay under 256 MiB per
//! client-hour; `cargo test --test abuse_budget -- --nocapture --test-threads 1` prints the
//! docs/performance.md table, one row per test, in the tests' (alphabetical) order.
//!
//! Worst cases use what costs nothing more: 128-character names (the longest the API takes),
//! a fresh `Idempotency-Key` on every request where a record is kept (refusals, denials and
//! peeks included), bodies just under a pricing step. The units divided by are the test's
//! own arithmetic (the routes' `Terms::cost`, plus the key's surcharge), and the gateway's global limiter
//! must have charged exactly as many: it runs with a budget too large to refuse anything, and
//! its `RateLimit-Remaining` after the last request tells what it spent.

#[path = "common/mod.rs"]
mod common;

use std::net::SocketAddr;

use futures::stream::{self, StreamExt};
use redis_gateway::config::StoreChoice;
use redis_gateway::middleware::costs;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::{Backend, Gateway, RedisProcess};

/// The default global budget: units per second (GATEWAY_GLOBAL_COUNT / GATEWAY_GLOBAL_PERIOD).
const UNITS_PER_SECOND: f64 = 50.0;
/// The default limit, GATEWAY_GLOBAL_BURST + 1: what costs are capped at, or refused above.
const LIMIT: u64 = 101;
/// The limiter's budget in the test: a burst no row exhausts, refilled one unit per
/// `TEST_PERIOD` seconds (never a whole unit during a row), so what it reports remaining
/// falls by exactly the units charged.
const TEST_BURST: u64 = 10_000_000;
const TEST_PERIOD: u64 = 100_000;
/// Requests in flight: enough to fill Redis, few enough that a merge queued behind others on
/// a loaded 2-core machine stays inside the store timeout.
const IN_FLIGHT: usize = 4;
/// The abuse budget's goal, per client-hour (docs/performance.md "Abuse budget").
const MIB_PER_HOUR_CAP: f64 = 256.0;
const DAY: u64 = 86_400;

/// A unique 128-character name (the longest a queue, page, layer, filter, key or id may be):
/// a worst case pays nothing for it, and each key in Redis repeats it.
fn long(tag: &str, i: usize) -> String {
    format!("{tag:x<118}{i:010}")
}

/// What a request must answer for the row to be the case it says it is.
type Want = fn(u16, &Value) -> bool;

fn success(status: u16, _: &Value) -> bool {
    (200..300).contains(&status)
}

fn created(status: u16, _: &Value) -> bool {
    status == 201
}

/// One request of a worst case.
struct Req {
    method: &'static str,
    /// Path with query.
    path: String,
    /// The route template it matches (what the cost table is keyed by).
    route: &'static str,
    body: Option<Vec<u8>>,
    admin: bool,
    idempotency_key: Option<String>,
    /// Sent with `Transfer-Encoding: chunked` and no `Content-Length`.
    chunked: bool,
    want: Want,
}

impl Req {
    fn new(method: &'static str, path: String, route: &'static str, body: &Value) -> Self {
        Self {
            method,
            path,
            route,
            body: Some(serde_json::to_vec(body).unwrap()),
            admin: false,
            idempotency_key: None,
            chunked: false,
            want: success,
        }
    }

    fn get(path: &str) -> Self {
        Self {
            body: None,
            ..Self::new("GET", path.to_owned(), "", &Value::Null)
        }
    }

    fn post(path: String, route: &'static str, body: &Value) -> Self {
        Self::new("POST", path, route, body)
    }

    fn put(path: String, route: &'static str, body: &Value) -> Self {
        Self::new("PUT", path, route, body)
    }

    fn admin(self) -> Self {
        Self {
            admin: true,
            ..self
        }
    }

    /// Under `Idempotency-Key: key` (the test's keys are fresh: a record per request).
    fn keyed(self, key: String) -> Self {
        Self {
            idempotency_key: Some(key),
            ..self
        }
    }

    fn chunked(self) -> Self {
        Self {
            chunked: true,
            ..self
        }
    }

    fn wants(self, want: Want) -> Self {
        Self { want, ..self }
    }

    /// The units the global limiter charges at the default budget: the route's cost from the
    /// bytes sent (whatever the framing), plus the key's surcharge, capped at the limit.
    fn units(&self) -> u64 {
        let body = self.body.as_deref();
        let query = self.path.split_once('?').map(|(_, q)| q);
        let len = body.map(|b| b.len() as u64);
        let charge = redis_gateway::openapi::route_terms().cost(
            self.method,
            self.route,
            query,
            len,
            body,
            LIMIT,
        );
        let costs::Charge::Units(units) = charge else {
            panic!("{} {}: {charge:?}", self.method, self.path);
        };
        let key = self
            .idempotency_key
            .as_ref()
            .map_or(0, |_| costs::IDEMPOTENCY_KEY_UNITS);
        (units + key).min(LIMIT)
    }
}

/// A reply: status, the global limiter's `RateLimit-Remaining`, body.
struct Reply {
    status: u16,
    remaining: Option<u64>,
    body: Value,
}

async fn send(gw: &Gateway, r: &Req) -> Reply {
    if r.chunked {
        return send_chunked(gw.addr, r).await;
    }
    let mut req = gw
        .client
        .request(r.method.parse().unwrap(), gw.url(&r.path));
    if r.admin {
        req = req.bearer_auth(common::ADMIN_TOKEN);
    }
    if let Some(key) = &r.idempotency_key {
        req = req.header("idempotency-key", key);
    }
    if let Some(b) = &r.body {
        req = req
            .header("content-type", "application/json")
            .body(b.clone());
    }
    let resp = req.send().await.expect("request reaches the gateway");
    let status = resp.status().as_u16();
    let remaining = resp
        .headers()
        .get("ratelimit-remaining")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let bytes = resp.bytes().await.expect("body");
    Reply {
        status,
        remaining,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

/// The same request over a raw HTTP/1.1 connection, its body in chunks of 300 bytes and no
/// `Content-Length` (reqwest states the length of every body it is given whole).
async fn send_chunked(addr: SocketAddr, r: &Req) -> Reply {
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\n",
        r.method, r.path
    );
    if r.admin {
        head += &format!("authorization: Bearer {}\r\n", common::ADMIN_TOKEN);
    }
    if let Some(key) = &r.idempotency_key {
        head += &format!("idempotency-key: {key}\r\n");
    }
    head += "\r\n";
    let mut out = head.into_bytes();
    for chunk in r.body.as_deref().unwrap_or_default().chunks(300) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    conn.write_all(&out).await.unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).await.unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a reply head");
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let mut rest = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1)?.parse().ok())
        .expect("a status line");
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let mut body = Vec::new();
    if header("transfer-encoding") == Some("chunked") {
        while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
            let len = usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16)
                .expect("a chunk size");
            if len == 0 {
                break;
            }
            body.extend_from_slice(&rest[end + 2..end + 2 + len]);
            rest = &rest[end + 4 + len..];
        }
    } else {
        body.extend_from_slice(rest);
    }
    Reply {
        status,
        remaining: header("ratelimit-remaining").and_then(|v| v.parse().ok()),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

/// What driving some requests cost.
struct Driven {
    /// By the test's arithmetic.
    units: u64,
    /// The least `RateLimit-Remaining` any reply carried: the limiter's after the last charge.
    remaining: u64,
}

/// Sends `reqs`, `in_flight` at a time; the first reply a request did not want is an error.
async fn drive(gw: &Gateway, reqs: Vec<Req>, in_flight: usize) -> Result<Driven, String> {
    let replies = stream::iter(reqs)
        .map(|r| async move {
            let reply = send(gw, &r).await;
            let wanted = (r.want)(reply.status, &reply.body);
            let failure = (!wanted)
                .then(|| format!("{} {}: {} {}", r.method, r.path, reply.status, reply.body));
            (r.units(), reply.remaining, failure)
        })
        .buffer_unordered(in_flight)
        .collect::<Vec<_>>()
        .await;
    let failed: Vec<&String> = replies.iter().filter_map(|(.., f)| f.as_ref()).collect();
    if let Some(first) = failed.first() {
        return Err(format!("{} requests failed, e.g. {first}", failed.len()));
    }
    let remaining = replies
        .iter()
        .map(|(_, remaining, _)| remaining.ok_or("a reply without RateLimit-Remaining"))
        .try_fold(u64::MAX, |least, r| r.map(|r| least.min(r)))?;
    Ok(Driven {
        units: replies.iter().map(|(units, ..)| units).sum(),
        remaining,
    })
}

fn used_memory(redis: &RedisProcess) -> f64 {
    let info = redis.cli(&["info", "memory"]).expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// The kind of a key: what follows the test's key prefix (`t<pid>-<n>:`).
fn kind(key: &str) -> &str {
    key.split_once(':').map_or("", |(_, rest)| rest)
}

/// Keys with no TTL, but for those bounded without one: the cohort chunk registry (at most
/// 4,096 chunk numbers), what an admin's voucher owns (`sk:`, `skr:`) and the one secret
/// visitor ids are hashed with (`uvk:`, 32 bytes).
fn keys_without_expiry(redis: &RedisProcess) -> Vec<String> {
    let script = "local out = {} for _, k in ipairs(redis.call('KEYS', '*')) do \
                  if redis.call('TTL', k) == -1 then out[#out + 1] = k end end return out";
    let out = redis.cli(&["eval", script, "0"]).unwrap_or_default();
    out.lines()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .filter(|k| {
            let kind = kind(k);
            !(kind.starts_with("ckr:")
                || kind.starts_with("sk:")
                || kind.starts_with("skr:")
                || kind.starts_with("uvk:"))
        })
        .map(str::to_owned)
        .collect()
}

/// The longest-lived key (TTL in seconds) but for the test limiter's own bucket (`rlg:`).
fn longest_lived(redis: &RedisProcess) -> (String, u64) {
    let script = "local best, name = -1, '' for _, k in ipairs(redis.call('KEYS', '*')) do \
                  local t = redis.call('TTL', k) \
                  if t > best and not string.find(k, 'rlg:{', 1, true) then best, name = t, k end \
                  end return {name, best}";
    let out = redis.cli(&["eval", script, "0"]).unwrap_or_default();
    let mut lines = out.lines().map(str::trim);
    let name = lines.next().unwrap_or_default().to_owned();
    // -1: no key with a TTL.
    let ttl: i64 = lines.next().and_then(|t| t.parse().ok()).unwrap_or(-1);
    (name, ttl.max(0) as u64)
}

/// Redis's own record of calls slower than 5 ms (`slowlog-log-slower-than 5000` below).
fn slow_calls(redis: &RedisProcess) -> String {
    redis.cli(&["slowlog", "get", "5"]).unwrap_or_default()
}

/// A row of the table.
struct Row {
    kind: &'static str,
    /// The "bound and expiry" column.
    bound: &'static str,
    /// No key the row makes may live longer (seconds); keys without a TTL are checked apart.
    longest_s: u64,
}

/// `n` with thousands separators, as docs/performance.md writes numbers.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs `setup` (not measured), then the worst case `reqs`, on a fresh Redis; checks the
/// units charged, the bound and the expiries, and prints the table row.
async fn measure(row: Row, setup: Vec<Req>, reqs: Vec<Req>) {
    let redis = RedisProcess::start(&["--slowlog-log-slower-than", "5000"], false);
    measure_on(redis, row, setup, reqs).await;
}

async fn measure_on(redis: RedisProcess, row: Row, setup: Vec<Req>, reqs: Vec<Req>) {
    let mut settings = common::settings(Backend::Redis);
    settings.store = StoreChoice::Redis(redis.url());
    settings.global.enabled = true;
    settings.global.shadow = false;
    settings.global.max_burst = TEST_BURST;
    settings.global.count_per_period = 1;
    settings.global.period = TEST_PERIOD;
    let gw = Gateway::with_settings(settings).await;
    let kind = row.kind;
    // One cheap request first, so the limiter's own bucket exists before `used_memory` is read.
    let mut setup = setup;
    setup.push(Req::get("/v1/clients/me"));
    // In order: a purchase may need the voucher made before it.
    let ready = drive(&gw, setup, 1).await.expect("setup");
    let before = used_memory(&redis);
    let requests = reqs.len() as u64;
    let driven = drive(&gw, reqs, IN_FLIGHT).await;
    let slow = slow_calls(&redis);
    let driven = driven.unwrap_or_else(|e| panic!("{kind}: {e}; Redis's slow log: {slow}"));
    let units = driven.units;
    assert_eq!(
        ready.remaining.checked_sub(driven.remaining),
        Some(units),
        "{kind}: the gateway charged other than the test counts"
    );
    let lasting = keys_without_expiry(&redis);
    assert!(
        lasting.is_empty(),
        "{kind}: keys that never expire: {lasting:?}"
    );
    let (key, ttl) = longest_lived(&redis);
    assert!(
        ttl <= row.longest_s,
        "{kind}: {key} lives {ttl} s, more than the {} s the row states",
        row.longest_s
    );
    let grown = (used_memory(&redis) - before).max(0.0);
    let per_unit = grown / units as f64;
    let per_hour = per_unit * UNITS_PER_SECOND * 3600.0 / (1024.0 * 1024.0);
    println!(
        "| {kind} | {}, {} | {} B | {} B | {per_hour:.0} MiB | {} |",
        thousands(requests),
        thousands(units),
        thousands((grown / requests as f64).round() as u64),
        thousands(per_unit.round() as u64),
        row.bound,
    );
    assert!(
        per_hour <= MIB_PER_HOUR_CAP,
        "{kind}: {per_unit:.0} bytes per unit = {per_hour:.0} MiB per client-hour at the default budget"
    );
}

// ---- check-ins ----

const CHECKIN_BOUND: &str = "a chunk stays a set of user offsets (an intset, 4 B per user) \
until it holds 512 users, then a bitmap of ≤ 128 KiB; at most 4,096 chunks a day; keys expire \
with check-in retention (400 days); the chunk registry `ckr:{chunks}` holds ≤ 4,096 numbers and \
has no TTL";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkins_in_sparse_chunks() {
    // Each user is the last id of a chunk nobody else uses: a new month key and a new chunk.
    let reqs = (0..3000u64)
        .map(|k| {
            let user = (k << 20) | 0xF_FFFF;
            Req::post(
                format!("/v1/checkins/{user}"),
                "/v1/checkins/{user_id}",
                &json!({}),
            )
        })
        .collect();
    let row = Row {
        kind: "check-in, a new cohort chunk per user (user ids `k·2^20 + 1048575`)",
        bound: CHECKIN_BOUND,
        // 400 days after the month's end.
        longest_s: (400 + 31) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn checkins_that_turn_chunks_into_bitmaps() {
    // 520 users spread over the top of each chunk: past the sparse limit, a whole bitmap.
    let reqs = (0..6u64)
        .flat_map(|k| (0..520u64).map(move |i| (k << 20) | (0xF_FFFF - i * 7)))
        .map(|user| {
            Req::post(
                format!("/v1/checkins/{user}"),
                "/v1/checkins/{user_id}",
                &json!({}),
            )
        })
        .collect();
    let row = Row {
        kind: "check-in, chunks filled past the sparse limit",
        bound: "as above",
        // 400 days after the month's end.
        longest_s: (400 + 31) * DAY,
    };
    measure(row, vec![], reqs).await;
}

// ---- dedup ----

/// 3,000 adds of one item, each to a new filter with a 128-character name.
fn new_filters(tag: &str) -> Vec<Req> {
    (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/dedup/{}/items", long(tag, i)),
                "/v1/dedup/{filter}/items",
                &json!({"items": ["a"]}),
            )
        })
        .collect()
}

/// 200 adds of 1,000 new items each to one filter.
fn growing_filter() -> Vec<Req> {
    (0..200)
        .map(|r| {
            let items: Vec<String> = (0..1000).map(|i| format!("{r}.{i}")).collect();
            Req::post(
                "/v1/dedup/grow/items".to_owned(),
                "/v1/dedup/{filter}/items",
                &json!({ "items": items }),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_filters_created_on_first_use() {
    let reqs = new_filters("f");
    let row = Row {
        kind: "dedup, a new filter with a 128-character name per request",
        bound: "first layer of an auto-created filter: 300 items at 1% (~380 B); idle filters \
                expire after 30 days",
        longest_s: 30 * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_growing_filter() {
    let reqs = growing_filter();
    let row = Row {
        kind: "dedup, one filter grown with new items",
        bound: "layers grow with items; charged per body byte",
        longest_s: 30 * DAY,
    };
    measure(row, vec![], reqs).await;
}

/// The same two rows on RedisBloom's native engine (Redis 7 with `redisbloom.so`, which
/// ./scripts/servers fetches): its filters are RedisBloom's own structures, so their bytes
/// differ from the Lua engine's by design; the budget is the same.
async fn measure_native(row: Row, reqs: Vec<Req>) {
    let Some(module) = common::redisbloom_module() else {
        eprintln!(
            "SKIPPED {}: needs target/servers/redisbloom.so (./scripts/servers)",
            row.kind
        );
        return;
    };
    let module = module.to_string_lossy().into_owned();
    let redis = RedisProcess::start(
        &["--slowlog-log-slower-than", "5000", "--loadmodule", &module],
        false,
    );
    // A filter reserved first shows the engine new filters get.
    let setup = vec![Req::put(
        "/v1/dedup/engine".to_owned(),
        "/v1/dedup/{filter}",
        &json!({"capacity": 500, "error_rate": 0.01}),
    )
    .admin()
    .wants(|status, view| status == 201 && view["engine"] == "redisbloom")];
    measure_on(redis, row, setup, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_native_filters_created_on_first_use() {
    let reqs = new_filters("n");
    let row = Row {
        kind: "dedup on RedisBloom, a new filter with a 128-character name per request",
        bound: "RedisBloom's filter of 300 items at 0.5% (its first layer at half the rate) \
                plus the parameters' hash; idle filters expire after 30 days",
        longest_s: 30 * DAY,
    };
    measure_native(row, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dedup_native_growing_filter() {
    let reqs = growing_filter();
    let row = Row {
        kind: "dedup on RedisBloom, one filter grown with new items",
        bound: "RedisBloom adds layers (twice the size each) as items come; charged per body \
                byte",
        longest_s: 30 * DAY,
    };
    measure_native(row, reqs).await;
}

// ---- geo ----

/// The layer listing's index lives an hour past the last layer entered in it (its entries are
/// swept an hour past their layer's expiry: docs/geo.md "Listing layers").
const LAYER_INDEX_SLACK_S: u64 = 3_600;

const GEO_BOUND: &str = "`GATEWAY_GEO_MAX_PLACES` (100,000) places per layer, then `409 \
layer_full`; a layer expires `GATEWAY_GEO_RETENTION_DAYS` (400) after its last write; the \
listing's index holds one entry per layer (~520 B with a 128-character name), swept out an hour \
after the layer expired";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_a_batches_into_new_layers() {
    let reqs = (0..100)
        .map(|l| {
            let places: Vec<Value> = (0..1000)
                .map(|i| json!({"member": format!("{i}"), "lon": 116.0 + f64::from(i) * 1e-4, "lat": 39.9}))
                .collect();
            Req::post(
                format!("/v1/geo/l{l}"),
                "/v1/geo/{layer}",
                &json!({ "places": places }),
            )
        })
        .collect();
    let row = Row {
        kind: "geo, batches of 1,000 places with short names",
        bound: GEO_BOUND,
        longest_s: 400 * DAY + LAYER_INDEX_SLACK_S,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_a_batches_into_new_layers_in_minimal_json() {
    // The fewest body bytes per place: two-character names, coordinates `0`, no spaces
    // (`{"member":"ab","lon":0,"lat":0}`, 32 bytes a place with its comma).
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let reqs = (0..100)
        .map(|l| {
            let places: Vec<Value> = (0..1000)
                .map(|i| {
                    let member = [CHARS[i / 36], CHARS[i % 36]];
                    let member = std::str::from_utf8(&member).unwrap();
                    json!({"member": member, "lon": 0, "lat": 0})
                })
                .collect();
            Req::post(
                format!("/v1/geo/l{l}"),
                "/v1/geo/{layer}",
                &json!({ "places": places }),
            )
        })
        .collect();
    let row = Row {
        kind: "geo, batches of 1,000 places in minimal JSON (`{\"member\":\"ab\",\"lon\":0,\"lat\":0}`)",
        bound: "as above",
        longest_s: 400 * DAY + LAYER_INDEX_SLACK_S,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_b_long_names_in_small_batches_on_new_layers() {
    // Members past 64 bytes turn a layer's sorted set from a listpack into a skip list and a
    // hash table: as many 65-byte ones as a body under 432 B holds (the cheapest step), on a
    // new 128-character layer each.
    let reqs = (0..3000)
        .map(|i| {
            let place =
                |p: usize| json!({"member": format!("{:x<55}{i:010}", p), "lon": 1, "lat": 1});
            let fits = |places: &[Value]| {
                serde_json::to_vec(&json!({ "places": places }))
                    .unwrap()
                    .len()
                    < 432
            };
            let mut places = vec![place(0)];
            loop {
                let mut more = places.clone();
                more.push(place(places.len()));
                if !fits(&more) {
                    break;
                }
                places = more;
            }
            assert_eq!(places.len(), 4);
            Req::post(
                format!("/v1/geo/{}", long("l", i)),
                "/v1/geo/{layer}",
                &json!({ "places": places }),
            )
        })
        .collect();
    let row = Row {
        kind:
            "geo, a batch of < 432 B: 4 places with 65-character names on a new 128-character layer",
        bound: "as above",
        longest_s: 400 * DAY + LAYER_INDEX_SLACK_S,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn geo_c_one_long_place_on_new_layers() {
    let reqs = (0..3000)
        .map(|i| {
            Req::put(
                format!("/v1/geo/{}/{}", long("l", i), long("m", i)),
                "/v1/geo/{layer}/{member}",
                &json!({"lon": 116.0, "lat": 39.9}),
            )
        })
        .collect();
    let row = Row {
        kind: "geo, one place with a 128-character name on a new 128-character layer",
        bound: "as above",
        longest_s: 400 * DAY + LAYER_INDEX_SLACK_S,
    };
    measure(row, vec![], reqs).await;
}

// ---- locks ----

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn locks_on_new_names() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/locks/{}", long("n", i)),
                "/v1/locks/{name}",
                &json!({"owner": long("o", i), "ttl_ms": 3_600_000}),
            )
        })
        .collect();
    let row = Row {
        kind: "lock acquire, a new 128-character name and owner per request",
        bound: "one key per name, with the lease's fencing token, expiring 1 h after the lease \
                (≤ 1 h; tokens stay unique after it expired: they follow the store's clock)",
        longest_s: 2 * 3600,
    };
    measure(row, vec![], reqs).await;
}

// ---- queues ----

const QUEUE: &str = "/v1/queues/{queue}/jobs";

/// A job whose whole body is `len` bytes.
fn job_of(len: usize, id: &str) -> Value {
    let frame = serde_json::to_vec(&json!({"payload": "", "id": id}))
        .unwrap()
        .len();
    let body = json!({"payload": "x".repeat(len - frame), "id": id});
    assert_eq!(serde_json::to_vec(&body).unwrap().len(), len);
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_a_big_payloads() {
    // Near the 64 KiB payload cap, on a few queues: the stored bytes follow the body.
    let payload = "x".repeat(60 * 1024);
    let reqs = (0..200)
        .map(|i| {
            Req::post(
                format!("/v1/queues/q{}/jobs", i % 20),
                QUEUE,
                &json!({ "payload": payload, "delay_ms": 3_600_000 }),
            )
            .wants(created)
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, 60 KiB payloads",
        bound: "`3 + body bytes / 1024` units per enqueue; ≤ `GATEWAY_QUEUE_MAX_JOBS` (100,000) \
                jobs per queue, then `409 queue_full`; the dead list keeps the newest 1,000; a \
                queue's keys expire 7 days (up to an hour more) after the later of its last \
                write and its latest due time or visibility deadline",
        // An hour of delay, and an expiry refresh's hour of slack (`IDLE_SLACK_SECS`).
        longest_s: 7 * DAY + 2 * 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_a_big_payloads_of_short_numbers() {
    // Numbers whose shortest text prints long (`1e15` is 1000000000000000.0 once parsed and
    // printed): the stored payload must be the bytes sent, not their reprint.
    let numbers = vec!["1e15"; 3_400].join(",");
    let body = format!(r#"{{"payload":[{numbers}],"delay_ms":3600000}}"#);
    let reqs = (0..200)
        .map(|i| {
            let mut r = Req::post(format!("/v1/queues/q{}/jobs", i % 20), QUEUE, &Value::Null)
                .wants(created);
            r.body = Some(body.clone().into_bytes());
            r
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, 17 KB payloads of `1e15` numbers",
        bound: "as above; a payload is stored as the bytes sent",
        longest_s: 7 * DAY + 2 * 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_b_small_jobs_on_new_queues() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/queues/{}/jobs", long("q", i)),
                QUEUE,
                &json!({"payload": 1, "id": long("j", i)}),
            )
            .wants(created)
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, a small job with a 128-character id on a new 128-character queue",
        bound: "as above",
        longest_s: 7 * DAY + 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_c_small_jobs_with_keys_on_new_queues() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/queues/{}/jobs", long("q", i)),
                QUEUE,
                &json!({"payload": 1, "id": long("j", i)}),
            )
            .keyed(format!("key-{i}"))
            .wants(created)
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, the same with a fresh `Idempotency-Key`",
        bound: "as above; the key's record expires after 24 h",
        longest_s: 7 * DAY + 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_d_1k_jobs_on_new_queues() {
    // The most one unit's body may hold (1,023 bytes), on a new queue each.
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/queues/{}/jobs", long("q", i)),
                QUEUE,
                &job_of(1023, &long("j", i)),
            )
            .wants(created)
        })
        .collect();
    let row = Row {
        kind:
            "queue enqueue, a 1,023-byte body with a 128-character id on a new 128-character queue",
        bound: "as above",
        longest_s: 7 * DAY + 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_e_1k_jobs_with_keys_on_new_queues() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/queues/{}/jobs", long("q", i)),
                QUEUE,
                &job_of(1023, &long("j", i)),
            )
            .keyed(format!("key-{i}"))
            .wants(created)
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, the same with a fresh `Idempotency-Key`",
        bound: "as above",
        longest_s: 7 * DAY + 3600,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queues_f_1k_jobs_with_keys_on_new_queues_chunked() {
    // The row above with its bodies chunked: the limiter charges the bytes read, so the same
    // bytes per unit.
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/queues/{}/jobs", long("q", i)),
                QUEUE,
                &job_of(1023, &long("j", i)),
            )
            .keyed(format!("key-{i}"))
            .chunked()
            .wants(created)
        })
        .collect();
    let row = Row {
        kind: "queue enqueue, the same with the body chunked (no `Content-Length`)",
        bound: "as above",
        longest_s: 7 * DAY + 3600,
    };
    measure(row, vec![], reqs).await;
}

// ---- rate-limit checks ----

const CHECK: &str = "/v1/ratelimit/check";

/// A GCRA check on `key` whose full bucket lasts a day, the longest
/// `GATEWAY_RATELIMIT_MAX_TTL_S` allows.
fn day_long(key: String, quantity: u64) -> Value {
    json!({"key": key, "max_burst": 0, "count_per_period": 1, "period": DAY, "quantity": quantity})
}

fn allowed_for_a_day(status: u16, body: &Value) -> bool {
    status == 200 && body["allowed"] == true && body["reset_after"] == DAY
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_a_day_long_keys() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(CHECK.to_owned(), CHECK, &day_long(long("k", i), 1)).wants(allowed_for_a_day)
        })
        .collect();
    let row = Row {
        kind:
            "rate-limit check, a new 128-character key per request, its bucket full again in a day",
        bound: "a key lives until its bucket is full again: (max_burst + 1) × period / \
                count_per_period ≤ `GATEWAY_RATELIMIT_MAX_TTL_S` (a day)",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_b_day_long_keys_with_idempotency_keys() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(CHECK.to_owned(), CHECK, &day_long(long("k", i), 1))
                .keyed(format!("key-{i}"))
                .wants(allowed_for_a_day)
        })
        .collect();
    let row = Row {
        kind: "rate-limit check, the same with a fresh `Idempotency-Key`",
        bound: "as above; the key's record (the first decision) expires after 24 h",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_c_peeks_with_idempotency_keys() {
    // A peek stores no bucket, but its decision is recorded under the key.
    let reqs = (0..3000)
        .map(|i| {
            Req::post(CHECK.to_owned(), CHECK, &day_long(long("k", i), 0))
                .keyed(format!("key-{i}"))
                .wants(|status, body| {
                    status == 200 && body["allowed"] == true && body["remaining"] == body["limit"]
                })
        })
        .collect();
    let row = Row {
        kind: "rate-limit check, a peek (`quantity: 0`) with a fresh `Idempotency-Key`",
        bound: "the key's record expires after 24 h",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_d_denials_with_idempotency_keys() {
    // More than the limit is always denied and stores no bucket; the denial is recorded.
    let reqs = (0..3000)
        .map(|i| {
            Req::post(CHECK.to_owned(), CHECK, &day_long(long("k", i), 2))
                .keyed(format!("key-{i}"))
                .wants(|status, body| status == 200 && body["allowed"] == false)
        })
        .collect();
    let row = Row {
        kind: "rate-limit check, denied, with a fresh `Idempotency-Key`",
        bound: "as above",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_e_fixed_windows() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                CHECK.to_owned(),
                CHECK,
                &json!({"algorithm": "fixed_window", "key": long("f", i),
                        "count_per_period": 1_000_000, "period": DAY, "quantity": 1}),
            )
        })
        .collect();
    let row = Row {
        kind: "rate-limit check, `fixed_window`, a new 128-character key per request",
        bound: "one counter per key, expiring at its window's end (≤ `period` ≤ a day)",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ratelimit_f_sliding_logs() {
    // The most units one request may store at the default burst, on a new day-long log each.
    let reqs = (0..60)
        .map(|i| {
            Req::post(
                CHECK.to_owned(),
                CHECK,
                &json!({"algorithm": "sliding_window", "key": long("s", i),
                        "count_per_period": 10_000, "period": DAY, "quantity": 799}),
            )
        })
        .collect();
    let row = Row {
        kind: "rate-limit check, `sliding_window`, a new day-long log per request, 799 units stored each",
        bound: "one sorted-set member (~140 B) per admitted unit, so a check costs `1 + \
                min(quantity, count_per_period) / 8` (over the burst: 413); ≤ 10,000 members \
                per log; the log expires a period after its newest unit",
        longest_s: DAY,
    };
    measure(row, vec![], reqs).await;
}

// ---- seckill ----

const BUY: &str = "/v1/seckill/vouchers/{voucher_id}/orders";

/// An admin's voucher with a 128-character name, on sale now.
fn voucher(name: &str, stock: u64) -> Req {
    let now = chrono::Utc::now();
    Req::put(
        format!("/v1/seckill/vouchers/{name}"),
        "/v1/seckill/vouchers/{voucher_id}",
        &json!({"stock": stock, "begin": (now - chrono::Duration::hours(1)).to_rfc3339(),
                "end": (now + chrono::Duration::hours(1)).to_rfc3339()}),
    )
    .admin()
}

fn buy(name: &str, user: u64) -> Req {
    Req::post(
        format!("/v1/seckill/vouchers/{name}/orders"),
        BUY,
        &json!({ "user_id": user }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seckill_a_orders() {
    let name = long("v", 0);
    let reqs = (0..3000u64)
        .map(|u| buy(&name, 4_000_000_000 + u).wants(created))
        .collect();
    let row = Row {
        kind: "seckill purchase (stock set by an admin, a 128-character voucher id)",
        bound: "orders are bounded by the stock an admin set (≤ `GATEWAY_SECKILL_MAX_ORDERS`); \
                vouchers have no TTL (admin-created)",
        // Nothing it makes expires: orders are bounded by the stock instead.
        longest_s: 0,
    };
    measure(row, vec![voucher(&name, 100_000)], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seckill_b_refused_as_sold_out_with_idempotency_keys() {
    let name = long("v", 0);
    let reqs = (0..3000u64)
        .map(|u| {
            buy(&name, 4_000_000_000 + u)
                .keyed(format!("key-{u}"))
                .wants(|status, body| status == 409 && body["code"] == "sold_out")
        })
        .collect();
    let row = Row {
        kind: "seckill purchase refused (sold out), a fresh `Idempotency-Key` each",
        bound: "not bounded by stock: the refusal is recorded under the key, and the record \
                expires after 24 h",
        longest_s: DAY,
    };
    let setup = vec![voucher(&name, 1), buy(&name, 1).wants(created)];
    measure(row, setup, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seckill_c_refused_as_already_ordered_with_idempotency_keys() {
    // The refusal's record holds the order ids the user has: one (the default per-user limit).
    let name = long("v", 0);
    let reqs = (0..3000u64)
        .map(|u| {
            buy(&name, 7)
                .keyed(format!("key-{u}"))
                .wants(|status, body| status == 409 && body["code"] == "already_ordered")
        })
        .collect();
    let row = Row {
        kind: "seckill purchase refused (already ordered), a fresh `Idempotency-Key` each",
        bound: "as above",
        longest_s: DAY,
    };
    let setup = vec![voucher(&name, 100), buy(&name, 7).wants(created)];
    measure(row, setup, reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seckill_d_refused_with_many_orders_held_with_idempotency_keys() {
    // A voucher allowing the most orders per user (an admin's choice), all of them bought.
    let name = long("v", 0);
    let most = redis_gateway::seckill::MAX_PER_USER;
    let mut make = voucher(&name, u64::from(most) + 1);
    let mut body: Value = serde_json::from_slice(make.body.as_deref().unwrap()).unwrap();
    body["per_user_limit"] = json!(most);
    make.body = Some(serde_json::to_vec(&body).unwrap());
    let mut setup = vec![make];
    setup.extend((0..most).map(|_| buy(&name, 7).wants(created)));
    let reqs = (0..300u64)
        .map(|u| {
            buy(&name, 7)
                .keyed(format!("key-{u}"))
                .wants(|status, body| status == 409 && body["code"] == "already_ordered")
        })
        .collect();
    let row = Row {
        kind: "seckill purchase refused (already ordered, 1,000 orders held), a fresh `Idempotency-Key` each",
        bound: "as above",
        longest_s: DAY,
    };
    measure(row, setup, reqs).await;
}

// ---- unique visitors ----

const UV_BOUND: &str = "per page-day a HyperLogLog (≤ 12 KiB) and a counter; expire with UV \
retention (400 days)";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_a_one_visitor_on_new_pages() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/uv/{}", long("p", i)),
                "/v1/uv/{page}",
                &json!({"visitor": "v"}),
            )
        })
        .collect();
    let row = Row {
        kind: "UV add, a new 128-character page per request",
        bound: UV_BOUND,
        // 400 days after the day's end.
        longest_s: (400 + 1) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_a_one_visitor_on_new_pages_chosen_to_be_dense() {
    // An id whose MurmurHash64A sets a register past the sparse encoding's reach: counted as
    // sent, one visit made a new page-day's HyperLogLog dense (12 KiB).
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/uv/{}", long("p", i)),
                "/v1/uv/{page}",
                &json!({"visitor": "hll-XRi76BAA"}),
            )
        })
        .collect();
    let row = Row {
        kind: "UV add, a crafted visitor (`hll-XRi76BAA`: a high register under Redis's own hash) on a new 128-character page",
        bound: "as above; ids are counted by their keyed hash, so none chooses its register",
        longest_s: (400 + 1) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_b_one_visitor_with_keys_on_new_pages() {
    let reqs = (0..3000)
        .map(|i| {
            Req::post(
                format!("/v1/uv/{}", long("p", i)),
                "/v1/uv/{page}",
                &json!({"visitor": "v"}),
            )
            .keyed(format!("key-{i}"))
        })
        .collect();
    let row = Row {
        kind: "UV add, the same with a fresh `Idempotency-Key`",
        bound: "as above; the key's record expires after 24 h",
        // 400 days after the day's end.
        longest_s: (400 + 1) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_c_many_visitors_on_new_pages() {
    // As many distinct visitors as a one-unit body holds: a sparse HyperLogLog that grows.
    let reqs = (0..3000)
        .map(|i| {
            // "0".."74": the shortest distinct visitors, 75 of them in 379 bytes.
            let visitors: Vec<String> = (0..75).map(|v| format!("{v}")).collect();
            let body = json!({ "visitors": visitors });
            assert_eq!(serde_json::to_vec(&body).unwrap().len(), 379, "one unit");
            Req::post(format!("/v1/uv/{}", long("p", i)), "/v1/uv/{page}", &body)
        })
        .collect();
    let row = Row {
        kind: "UV add, 75 visitors in a body of < 384 B on a new 128-character page",
        bound: "as above",
        // 400 days after the day's end.
        longest_s: (400 + 1) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_d_dense_pages() {
    // A page-day's HyperLogLog turns dense (12 KiB) past 3,000 sparse bytes, ~1,600 visitors:
    // more than one batch holds, so the cheapest way is a full batch of short visitors and a
    // small second one.
    let full: Vec<String> = (0..1000).map(|i| format!("{i}")).collect();
    let more: Vec<String> = (1000..2000).map(|i| format!("{i}")).collect();
    let reqs = (0..150)
        .flat_map(|i| {
            [&full, &more].map(|batch| {
                Req::post(
                    format!("/v1/uv/{}", long("d", i)),
                    "/v1/uv/{page}",
                    &json!({ "visitors": batch }),
                )
            })
        })
        .collect();
    let row = Row {
        kind: "UV add, a dense page-day (1,000 + 1,000 visitors)",
        bound: "as above",
        // 400 days after the day's end.
        longest_s: (400 + 1) * DAY,
    };
    measure(row, vec![], reqs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uv_e_merges_of_dense_sources_into_new_pages() {
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
                Req::post(
                    format!("/v1/uv/src{s}"),
                    "/v1/uv/{page}",
                    &json!({ "visitors": batch, "date": day(d) }),
                )
            })
        })
        .collect();
    let sources: Vec<String> = (0..20).map(|s| format!("src{s}")).collect();
    let reqs = (0..40)
        .map(|i| {
            Req::post(
                "/v1/uv/merge".to_owned(),
                "/v1/uv/merge",
                &json!({"sources": sources, "into": long("m", i), "from": day(7), "to": day(0)}),
            )
        })
        .collect();
    let row = Row {
        kind: "UV merge, 20 dense sources into a new 128-character page over 8 days",
        bound: "≤ 20 sources, ≤ 8 days per request at the default burst (`1 + 12 × days` units)",
        // 400 days after the day's end.
        longest_s: (400 + 1) * DAY,
    };
    measure(row, setup, reqs).await;
}
