//! Bounded work per request (docs/api.md "Clients and abuse"): no accepted request holds
//! Redis for more than about 5 ms, even at the largest inputs the API accepts.
//!
//! A private `redis-server` is loaded to the documented caps (geo layers at
//! `GATEWAY_GEO_MAX_PLACES`, spread out and crowded, a year of dense HyperLogLogs on several pages, a sold-out voucher
//! with a user at `per_user_limit`, deep dedup filters, full rate-limit logs, a queue of the
//! largest payloads); then every operation of the OpenAPI document gets its worst-case request,
//! with `SLOWLOG` recording every call (threshold 0). The assertion is on Redis's own time per
//! call, never on the request's wall-clock time; each case keeps the least of a few repeats
//! (more while it is over the budget), and among hundreds of like calls in one request the
//! slowest 1 in 1,000 is set aside (see [`slowest`]), so the OS pre-empting Redis on a loaded
//! machine cannot fail it while a genuinely long call still does.
//!
//! Where the time of one call does not depend on how many keys exist (a union reads 32
//! HyperLogLogs per call whether there are 4 pages of them or 100), fewer keys are loaded than
//! the caps allow, to keep the test's memory and run time small; the comments say where.
//!
//! The budget is set for the machines it was first measured on and scales with this one: a
//! plain `GEOADD` of 1,000 moves in the full layer is timed on the same server first, and a
//! machine on which it takes longer than there (memory-bound work: a skiplist's cache misses
//! cost two to four times as much on some hosts) gets a budget that much larger, so the verdict
//! says "more work than Redis's own command for it", not "a slow host".
//!
//! `cargo test --test redis_time -- --nocapture` prints the table docs/performance.md quotes.

#[path = "common/mod.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{Days, Utc};
use fred::prelude::*;
use fred::types::SlowlogEntry;
use futures::stream::{self, StreamExt};
use redis_gateway::config::StoreChoice;
use serde_json::{json, Value};

use common::{Backend, Gateway, RedisProcess};

/// The rule: Redis's own time for any one call a request makes, in microseconds.
const BUDGET_US: u64 = 5_000;
/// Redis's own time for a plain `GEOADD` of 1,000 moves in a layer of 100,000 where the budget
/// was set (`geo_put.lua`'s script, the same moves and its bound check, ~1.3 ms there).
const REFERENCE_GEOADD_US: u64 = 1_200;
/// Repeats per case; the least of them counts.
const REPEATS: usize = 3;
/// Most runs of a case whose best is still over the budget.
const RETRIES: usize = 8;
/// Held by every test in this file, so they take turns: run side by side (as the harness runs
/// a file's tests), one's work pre-empted another's Redis mid-script on two cores, and a grouped
/// run of ~0.9 ms alone was timed at 1.3 ms. Tokio's mutex, since each test has its runtime of
/// its own.
static TIMED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// Places in the big geo layer: `GATEWAY_GEO_MAX_PLACES`' default.
const GEO_PLACES: usize = 100_000;
/// Requests in flight while loading.
const LOADERS: usize = 8;

/// One request: method, path with query, body, whether it carries the admin token.
#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    path: String,
    body: Option<Value>,
    admin: bool,
    idempotency_key: Option<String>,
}

fn get(path: impl Into<String>) -> Req {
    Req {
        method: "GET",
        path: path.into(),
        body: None,
        admin: false,
        idempotency_key: None,
    }
}

fn post(path: impl Into<String>, body: Value) -> Req {
    Req {
        method: "POST",
        path: path.into(),
        body: Some(body),
        admin: false,
        idempotency_key: None,
    }
}

fn put(path: impl Into<String>, body: Value) -> Req {
    Req {
        method: "PUT",
        path: path.into(),
        body: Some(body),
        admin: false,
        idempotency_key: None,
    }
}

fn delete(path: impl Into<String>) -> Req {
    Req {
        method: "DELETE",
        path: path.into(),
        body: None,
        admin: false,
        idempotency_key: None,
    }
}

fn admin(mut r: Req) -> Req {
    r.admin = true;
    r
}

/// A worst case: the operation it covers, a label, and the request of repeat `i`.
struct Case {
    op: &'static str,
    label: &'static str,
    make: Box<dyn Fn(usize) -> Req>,
}

fn case(op: &'static str, label: &'static str, make: impl Fn(usize) -> Req + 'static) -> Case {
    Case {
        op,
        label,
        make: Box::new(make),
    }
}

async fn send(gw: &Gateway, r: &Req) -> (u16, Value) {
    let mut req = gw
        .client
        .request(r.method.parse().unwrap(), gw.url(&r.path));
    if let Some(b) = &r.body {
        req = req.json(b);
    }
    if r.admin {
        req = req.bearer_auth(common::ADMIN_TOKEN);
    }
    if let Some(key) = &r.idempotency_key {
        req = req.header("idempotency-key", key);
    }
    if r.path.ends_with("/events") {
        // An event stream stays open: its opening (the state read, the subscription) is the
        // request's work, and its first event says it is done.
        let mut answer = req.send().await.unwrap();
        let status = answer.status().as_u16();
        let _first = answer.chunk().await;
        return (status, Value::Null);
    }
    let (status, body) = gw.send(req).await;
    (status.as_u16(), body)
}

/// Sends `reqs`, [`LOADERS`] at a time; every one must succeed.
async fn load(gw: &Gateway, reqs: Vec<Req>) {
    let failed: Vec<String> = stream::iter(reqs)
        .map(|r| async move {
            let (status, body) = send(gw, &r).await;
            (status >= 300).then(|| format!("{} {}: {status} {body}", r.method, r.path))
        })
        .buffer_unordered(LOADERS)
        .filter_map(|f| async move { f })
        .collect()
        .await;
    assert!(failed.is_empty(), "loading failed: {:?}", &failed[..1]);
}

fn day(back: u64) -> String {
    (Utc::now().date_naive() - Days::new(back))
        .format("%Y-%m-%d")
        .to_string()
}

/// A deterministic spread of numbers in `0..1` (no `rand` seed to chase when a case fails).
fn spread(i: usize, salt: u64) -> f64 {
    let mut x = (i as u64 ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Copies `from` to each of `to` inside Redis (DUMP/RESTORE keeps the encoding), so a year of
/// dense keys costs one request to build, not thousands.
async fn copy_key(redis: &Client, from: &str, to: &[String]) {
    for part in to.chunks(64) {
        let script = "local v = redis.call('DUMP', KEYS[1]) \
                      for i = 2, #KEYS do redis.call('RESTORE', KEYS[i], 0, v, 'REPLACE') end \
                      return #KEYS";
        let mut keys = vec![from.to_owned()];
        keys.extend(part.iter().cloned());
        let _: i64 = redis.eval(script, keys, ()).await.expect("copy keys");
    }
}

/// Adds `n` members `<stem><i>` to the sorted set `key`, scored `first + i × step`, inside
/// Redis (10,000 a call).
async fn fill_sorted_set(redis: &Client, key: &str, stem: &str, n: i64, first: i64, step: i64) {
    let script = "for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do \
                  redis.call('ZADD', KEYS[1], tonumber(ARGV[4]) + i * tonumber(ARGV[5]), ARGV[1] .. i) \
                  end return 1";
    for from in (0..n).step_by(10_000) {
        let to = (from + 10_000).min(n) - 1;
        let args = [
            stem.to_owned(),
            from.to_string(),
            to.to_string(),
            first.to_string(),
            step.to_string(),
        ];
        let _: i64 = redis
            .eval(script, vec![key.to_owned()], args.to_vec())
            .await
            .expect("fill");
    }
}

async fn slowlog(redis: &Client) -> Vec<SlowlogEntry> {
    let raw: fred::types::Value = redis.slowlog_get(Some(-1)).await.unwrap();
    match raw {
        fred::types::Value::Array(entries) => entries
            .into_iter()
            .filter_map(|e| SlowlogEntry::try_from(e).ok())
            .filter(|e| {
                let cmd = e
                    .args
                    .first()
                    .and_then(|a| a.as_string())
                    .unwrap_or_default()
                    .to_ascii_uppercase();
                // The test's own bookkeeping, not the gateway's work.
                cmd != "SLOWLOG"
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Name of a logged call: the command, and for a script the first key it touches.
fn call_name(e: &SlowlogEntry) -> String {
    let arg = |i: usize| {
        e.args
            .get(i)
            .and_then(|a| a.as_string())
            .unwrap_or_default()
    };
    let cmd = arg(0).to_ascii_uppercase();
    if cmd == "EVALSHA" || cmd == "EVAL" {
        format!("{cmd} {}", arg(3))
    } else {
        format!("{cmd} {}", arg(1))
    }
}

/// What kind of call an entry is: the command, and a script's SHA.
fn call_kind(e: &SlowlogEntry) -> String {
    let arg = |i: usize| {
        e.args
            .get(i)
            .and_then(|a| a.as_string())
            .unwrap_or_default()
    };
    format!("{} {}", arg(0).to_ascii_uppercase(), arg(1))
}

/// Calls of one kind past which the slowest 1 in [`OUTLIERS_PER`] is set aside.
const MANY_CALLS: usize = 200;
/// See [`MANY_CALLS`].
const OUTLIERS_PER: usize = 1_000;

/// The slowest call a request made, in µs, with its name. Redis's time per call is its own
/// wall clock around the call, so on a loaded machine a call pre-empted by the OS reads a
/// scheduler slice (~4 ms) slower. A request making thousands of like calls (check-in stats:
/// ~18,000) is then almost sure to show one, in every repeat; so among 200 or more calls of one
/// kind the slowest 1 in 1,000 are set aside. A kind whose calls are slow stays visible, and
/// fewer calls (every long single call this test has found) are judged by their maximum.
fn slowest(calls: &[SlowlogEntry]) -> (u64, String) {
    let mut kinds: BTreeMap<String, Vec<&SlowlogEntry>> = BTreeMap::new();
    for e in calls {
        kinds.entry(call_kind(e)).or_default().push(e);
    }
    kinds
        .into_values()
        .filter_map(|mut of_kind| {
            of_kind.sort_by_key(|e| e.duration);
            let skip = if of_kind.len() >= MANY_CALLS {
                of_kind.len() / OUTLIERS_PER
            } else {
                0
            };
            of_kind
                .get(of_kind.len() - 1 - skip)
                .map(|e| (e.duration.as_micros() as u64, call_name(e)))
        })
        .max()
        .unwrap_or((0, String::new()))
}

/// Runs one repeat of a case: Redis's slowest call (µs, what), the raw maximum, and how many
/// calls the request made.
async fn measure(gw: &Gateway, redis: &Client, r: &Req) -> (u64, String, u64, usize) {
    redis.slowlog_reset().await.unwrap();
    let (status, body) = send(gw, r).await;
    assert!(status < 500, "{} {}: {status} {body}", r.method, r.path);
    let calls = slowlog(redis).await;
    let raw = calls
        .iter()
        .map(|e| e.duration.as_micros() as u64)
        .max()
        .unwrap_or(0);
    let (us, what) = slowest(&calls);
    (us, what, raw, calls.len())
}

/// Puts the server's threads in the real-time scheduling class (`chrt -f`), so no ordinary
/// process of a loaded machine can pre-empt Redis mid-call: SLOWLOG measures wall time
/// inside Redis, and on two cores shared with a build or another test binary a 2.4 ms geo
/// batch was logged at 5.1 ms. Redis runs only when a command or its timer is due, so it
/// takes no more than its own work; the kernel's real-time throttle keeps 5% for the rest in
/// any case. Without the right (no `CAP_SYS_NICE`) the test still runs, and says so: its
/// verdict then again depends on the machine's load, which the repeats above soften.
fn first_in_line(server: &RedisProcess) {
    let pid = server.pid();
    let raised = std::process::Command::new("chrt")
        .args(["--all-tasks", "--fifo", "--pid", "1", &pid])
        .status()
        .is_ok_and(|s| s.success());
    if !raised {
        eprintln!("redis_time: cannot give redis-server {pid} real-time priority; timings may suffer from the machine's load");
    }
}

/// A private Redis logging every command's time (SLOWLOG), a gateway on it, a client of its
/// own to read the log, and the gateway's key prefix.
async fn slowlogged_gateway() -> (RedisProcess, Gateway, Client, String) {
    let server = RedisProcess::start(
        &[
            "--slowlog-log-slower-than",
            "0",
            "--slowlog-max-len",
            "100000",
        ],
        false,
    );
    first_in_line(&server);
    let mut settings = common::settings(Backend::Redis);
    settings.store = StoreChoice::Redis(server.url());
    settings.store_timeout = Duration::from_secs(10);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let redis = Builder::from_config(Config::from_url(&server.url()).unwrap())
        .build()
        .unwrap();
    redis.init().await.unwrap();
    (server, gw, redis, prefix)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_holds_redis_for_more_than_5_ms() {
    let _turn = TIMED.lock().await;
    let (server, gw, redis, prefix) = slowlogged_gateway().await;

    // ---- Loading (not measured) ----

    // Geo: one layer at the cap, points spread over Europe, in batches of the largest size.
    let place = |i: usize| {
        json!({"member": format!("p{i}"), "lon": -10.0 + 40.0 * spread(i, 1),
               "lat": 35.0 + 25.0 * spread(i, 2)})
    };
    load(
        &gw,
        (0..GEO_PLACES / 1000)
            .map(|b| {
                post(
                    "/v1/geo/big",
                    json!({"places": (b * 1000..(b + 1) * 1000).map(place).collect::<Vec<_>>()}),
                )
            })
            .collect(),
    )
    .await;

    // And one at the cap whose places crowd a few km around one spot: there a density
    // estimate cannot bound what a nearest-first circle reads.
    let crowded = |i: usize| {
        json!({"member": format!("c{i}"), "lon": 116.37 + 0.06 * spread(i, 3),
               "lat": 39.88 + 0.04 * spread(i, 4)})
    };
    load(
        &gw,
        (0..GEO_PLACES / 1000)
            .map(|b| {
                post(
                    "/v1/geo/city",
                    json!({"places": (b * 1000..(b + 1) * 1000).map(crowded).collect::<Vec<_>>()}),
                )
            })
            .collect(),
    )
    .await;

    // UV: four pages with a dense HyperLogLog on every day of the longest range (built once
    // per page and copied), and 96 more pages with one sparse day each: a union of 100 pages
    // reads as many keys per call as 100 dense pages would, at a fraction of the memory.
    let big_batch = |page: usize, part: usize, len: usize| {
        json!({"date": day(0), "visitors": (0..1000)
            .map(|v| format!("{page}-{part}-{v}-{}", "x".repeat(len))).collect::<Vec<_>>()})
    };
    let mut reqs = Vec::new();
    for page in 0..4 {
        for part in 0..5 {
            reqs.push(post(format!("/v1/uv/u{page}"), big_batch(page, part, 8)));
        }
    }
    for page in 4..100 {
        reqs.push(post(format!("/v1/uv/u{page}"), big_batch(page, 0, 8)));
    }
    load(&gw, reqs).await;
    for page in 0..4 {
        let to: Vec<String> = (1..366)
            .map(|d| format!("{prefix}uv:{{u{page}}}:{}", day(d)))
            .collect();
        copy_key(&redis, &format!("{prefix}uv:{{u{page}}}:{}", day(0)), &to).await;
    }

    // Check-ins: 64 cohort chunks, one of them a bitmap (more than 512 users), on every day of
    // the longest stats range (built on one day and copied). Stats read one chunk-day per call,
    // so the 4,096 chunks the registry allows take more calls, not longer ones.
    let mut reqs: Vec<Req> = (0..64u64)
        .map(|c| post(format!("/v1/checkins/{}", c << 20), json!({"date": day(0)})))
        .collect();
    reqs.extend((0..600u64).map(|u| {
        post(
            format!("/v1/checkins/{}", u * 1700),
            json!({"date": day(0)}),
        )
    }));
    for d in 0..31 {
        reqs.push(post("/v1/checkins/7", json!({"date": day(d)})));
    }
    load(&gw, reqs).await;
    for c in 0..64u64 {
        let to: Vec<String> = (1..92)
            .map(|d| format!("{prefix}ckd:{{{c}}}:{}", day(d)))
            .collect();
        copy_key(&redis, &format!("{prefix}ckd:{{{c}}}:{}", day(0)), &to).await;
    }

    // Seckill: a voucher with 2,000 orders, one user holding per_user_limit (1,000) of them.
    let window = json!({"stock": 1_000_000, "begin": "2020-01-01T00:00:00Z",
                        "end": "2099-01-01T00:00:00Z", "per_user_limit": 1000});
    let (s, b) = send(&gw, &admin(put("/v1/seckill/vouchers/v", window.clone()))).await;
    assert!(s < 300, "{b}");
    let mut reqs: Vec<Req> = (0..1000)
        .map(|_| post("/v1/seckill/vouchers/v/orders", json!({"user_id": 42})))
        .collect();
    reqs.extend((0..1000).map(|u| {
        post(
            "/v1/seckill/vouchers/v/orders",
            json!({"user_id": 1000 + u}),
        )
    }));
    load(&gw, reqs).await;

    // Listings: 1,000 vouchers with 100-character ids begun over the last year, and 100,000
    // more index entries whose vouchers were never written (each one a read that finds
    // nothing); 100,000 layer entries of 128-character names, half of them long expired (each
    // page call sweeps some out). Written into the indexes directly, in Redis.
    let year_ms: i64 = 365 * 86_400_000;
    let now_ms = Utc::now().timestamp_millis();
    let long = "v".repeat(96);
    load(
        &gw,
        (0..1000)
            .map(|i| {
                let at = |ms: i64| {
                    chrono::DateTime::from_timestamp_millis(ms)
                        .unwrap()
                        .to_rfc3339()
                };
                let begin = now_ms - year_ms + i * (year_ms / 1000);
                admin(put(
                    format!("/v1/seckill/vouchers/{long}{i:04}"),
                    json!({"stock": 5, "begin": at(begin), "end": at(begin + year_ms / 2)}),
                ))
            })
            .collect(),
    )
    .await;
    let index = format!("{prefix}skr:{{vouchers}}:begin");
    fill_sorted_set(
        &redis,
        &index,
        "ghost",
        100_000,
        now_ms - year_ms,
        year_ms / 100_000,
    )
    .await;
    let middle = now_ms - year_ms / 2;
    let layer = "l".repeat(122);
    let names = format!("{prefix}geor:{{layers}}");
    let expiries = format!("{prefix}geor:{{layers}}:expiry");
    fill_sorted_set(&redis, &names, &layer, 100_000, 0, 0).await;
    fill_sorted_set(&redis, &expiries, &layer, 100_000, 1_000, 1).await;
    let now_s = now_ms / 1000;
    fill_sorted_set(&redis, &expiries, &layer, 50_000, now_s + 86_400, 0).await;

    // Dedup: a filter reserved at the tightest error rate with a tiny capacity, grown through
    // many layers by 1,000-item batches, so adds and checks probe the deepest layout.
    let (s, b) = send(
        &gw,
        &admin(put(
            "/v1/dedup/deep",
            json!({"capacity": 100, "error_rate": 1e-12}),
        )),
    )
    .await;
    assert!(s < 300, "{b}");
    let items = |salt: usize, len: usize| -> Vec<String> {
        (0..1000)
            .map(|i| format!("{salt}-{i}-{}", "y".repeat(len)))
            .collect()
    };
    load(
        &gw,
        (0..8)
            .map(|s| post("/v1/dedup/deep/items", json!({"items": items(s, 16)})))
            .collect(),
    )
    .await;

    // Queues: jobs with the largest payload, due now, and a backlog of small ones.
    let payload = "z".repeat(64 * 1024 - 16);
    let mut reqs: Vec<Req> = (0..3 * 16)
        .map(|_| post("/v1/queues/q/jobs", json!({"payload": payload})))
        .collect();
    reqs.extend((0..2000).map(|i| {
        post(
            "/v1/queues/q/jobs",
            json!({"payload": i, "delay_ms": 3_600_000}),
        )
    }));
    load(&gw, reqs).await;

    // Claimed jobs, whose receipts the ack case spends.
    load(
        &gw,
        (0..REPEATS)
            .map(|i| post("/v1/queues/qa/jobs", json!({"payload": i})))
            .collect(),
    )
    .await;
    let (s, claimed) = send(&gw, &post("/v1/queues/qa/claim", json!({"max": REPEATS}))).await;
    assert_eq!(s, 200, "{claimed}");
    let receipts: Vec<(String, String)> = claimed["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap().to_owned(),
                j["receipt"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(receipts.len(), REPEATS);

    // Rate limits: sliding logs at their largest count, full.
    for i in 0..REPEATS {
        for _ in 0..10 {
            let (s, _) = send(
                &gw,
                &post(
                    "/v1/ratelimit/check",
                    json!({"key": format!("sw{i}"), "algorithm": "sliding_window",
                           "count_per_period": 10_000, "period": 2, "quantity": 1000}),
                ),
            )
            .await;
            assert_eq!(s, 200);
        }
    }
    // Let those logs expire as a whole, so the measured check trims 10,000 units at once.
    // Real time: a real Redis expires keys on its own clock.
    tokio::time::sleep(Duration::from_millis(2100)).await;

    // ---- The worst case of every operation ----
    let year = (day(365), day(0));
    let quarter = (day(91), day(0));
    let pages: Vec<String> = (0..100).map(|p| format!("u{p}")).collect();
    let visitors_max: Vec<String> = (0..1000)
        .map(|v| format!("new-{v}-{}", "v".repeat(500)))
        .collect();
    let items_max = items(99, 480);
    let cases = vec![
        case("healthz", "", |_| get("/healthz")),
        case("readyz", "", |_| get("/readyz")),
        case("metrics", "", |_| get("/metrics")),
        case("clientsMe", "", |_| get("/v1/clients/me")),
        case("policiesPutOverride", "", |i| {
            admin(put(
                format!("/v1/admin/policies/global/overrides/c{i}"),
                json!({"burst": 10, "count": 5, "period": 1, "ttl_s": 60}),
            ))
        }),
        case("policiesDeleteOverride", "none", |i| {
            admin(delete(format!(
                "/v1/admin/policies/global/overrides/gone{i}"
            )))
        }),
        case("policiesList", "", |_| {
            admin(get("/v1/admin/policies?limit=1000"))
        }),
        case("checkIn", "past day", |i| {
            post(
                format!("/v1/checkins/{}", 4_000_000_000u64 + i as u64),
                json!({"date": day(3)}),
            )
        }),
        case("checkinMonth", "31-day streak", |_| get("/v1/checkins/7")),
        case("checkinDay", "", |_| {
            get(format!("/v1/checkins/7/{}", day(0)))
        }),
        {
            let q = quarter.clone();
            case(
                "checkinStats",
                "92 days × 64 chunks, one a bitmap",
                move |_| get(format!("/v1/checkins/stats?from={}&to={}", q.0, q.1)),
            )
        },
        case("uvRecord", "1,000 visitors of 500 bytes", {
            let v = visitors_max.clone();
            move |i| {
                post(
                    format!("/v1/uv/u{i}"),
                    json!({"date": day(0), "visitors": v}),
                )
            }
        }),
        case("uvPage", "one day", |_| {
            get(format!("/v1/uv/u0?date={}", day(0)))
        }),
        {
            let y = year.clone();
            case("uvPage", "366 dense days", move |_| {
                get(format!("/v1/uv/u0?from={}&to={}", y.0, y.1))
            })
        },
        {
            let (y, p) = (year.clone(), pages.join(","));
            case("uvUnion", "100 pages × 366 days", move |_| {
                get(format!("/v1/uv?pages={p}&from={}&to={}", y.0, y.1))
            })
        },
        {
            let y = year.clone();
            case("uvMerge", "20 sources × 366 days", move |i| {
                post(
                    "/v1/uv/merge",
                    json!({"sources": (0..20).map(|p| format!("u{p}")).collect::<Vec<_>>(),
                           "into": format!("m{i}"), "from": y.0, "to": y.1}),
                )
            })
        },
        case("geoPutPlace", "", |i| {
            put(
                format!("/v1/geo/big/p{i}"),
                json!({"lon": 2.35, "lat": 48.85}),
            )
        }),
        case("geoPutPlaces", "1,000 moves in a full layer", move |i| {
            post(
                "/v1/geo/big",
                json!({"places": (i * 1000..(i + 1) * 1000).map(place).collect::<Vec<_>>()}),
            )
        }),
        case("geoGetPlace", "", |_| get("/v1/geo/big/p17")),
        case("geoDeletePlace", "", |i| {
            delete(format!("/v1/geo/big/p{}", 99_990 + i))
        }),
        case("geoDistance", "", |_| {
            get("/v1/geo/big/distance?from=p1&to=p2")
        }),
        case("geoNearby", "desc, 40,000 km, count 1000", |_| {
            get("/v1/geo/big/nearby?lon=10&lat=47&radius=40000&unit=km&count=1000&order=desc")
        }),
        case("geoNearby", "asc, 40,000 km, count 1000", |_| {
            get("/v1/geo/big/nearby?lon=10&lat=47&radius=40000&unit=km&count=1000")
        }),
        case(
            "geoNearby",
            "asc, 40,000 km, count 20, centre far away",
            |_| get("/v1/geo/big/nearby?lon=-150&lat=-60&radius=40000&unit=km&count=20"),
        ),
        case("geoNearby", "member, 500 km, count 1000", |_| {
            get("/v1/geo/big/nearby?member=p5&radius=500&unit=km&count=1000&order=desc")
        }),
        case(
            "geoNearby",
            "asc, in a crowd of 100,000, 40,000 km, count 20",
            |_| get("/v1/geo/city/nearby?lon=116.4&lat=39.9&radius=40000&unit=km&count=20"),
        ),
        case(
            "geoNearby",
            "asc, in a crowd of 100,000, 40,000 km, count 1000",
            |_| get("/v1/geo/city/nearby?lon=116.4&lat=39.9&radius=40000&unit=km&count=1000"),
        ),
        case(
            "geoNearby",
            "asc, 100 km off a crowd of 100,000, count 20",
            |_| get("/v1/geo/city/nearby?lon=117.5&lat=39.9&radius=5000&unit=km&count=20"),
        ),
        case("geoNearby", "asc, small circle, count 20", |_| {
            get("/v1/geo/big/nearby?lon=10&lat=47&radius=50&unit=km&count=20")
        }),
        case("geoNearby", "box 40,000 km, desc", |_| {
            get("/v1/geo/big/nearby?lon=10&lat=47&shape=box&width=40000&height=40000&unit=km&count=1000&order=desc")
        }),
        case("seckillPutVoucher", "", move |i| {
            admin(put(format!("/v1/seckill/vouchers/w{i}"), window.clone()))
        }),
        case("seckillRestock", "", |_| {
            admin(post(
                "/v1/seckill/vouchers/v/restock",
                json!({"quantity": 1_000_000}),
            ))
        }),
        case("seckillGetVoucher", "", |_| get("/v1/seckill/vouchers/v")),
        case("seckillVoucherEvents", "opening a stream", |_| {
            get("/v1/seckill/vouchers/v/events")
        }),
        case("uvPageEvents", "opening a stream on a dense page", |_| {
            get("/v1/uv/u0/events")
        }),
        case("queuesEvents", "opening a stream", |_| {
            get("/v1/queues/q/events")
        }),
        case("seckillBuy", "user at per_user_limit", |_| {
            post("/v1/seckill/vouchers/v/orders", json!({"user_id": 42}))
        }),
        case("seckillBuy", "new user", |i| {
            post(
                "/v1/seckill/vouchers/v/orders",
                json!({"user_id": 900_000 + i}),
            )
        }),
        case("seckillListOrders", "limit 1000", |_| {
            get("/v1/seckill/vouchers/v/orders?limit=1000")
        }),
        case("seckillUserOrders", "1,000 orders", |_| {
            get("/v1/seckill/vouchers/v/orders/42")
        }),
        case("seckillDeadLetters", "limit 1000", |_| {
            admin(get("/v1/seckill/vouchers/v/dead-letters?limit=1000"))
        }),
        case("seckillReplayDeadLetters", "", |_| {
            admin(post(
                "/v1/seckill/vouchers/v/dead-letters/replay",
                json!({}),
            ))
        }),
        case("seckillListVouchers", "limit 1000 of 101,000", |_| {
            get("/v1/seckill/vouchers?limit=1000")
        }),
        case(
            "seckillListVouchers",
            "status=active, limit 1000, a cursor that moved",
            move |_| {
                get(format!(
                    "/v1/seckill/vouchers?status=active&limit=1000&after={middle}~zz"
                ))
            },
        ),
        case("geoListLayers", "limit 1000 of 100,000, sweeping", |_| {
            get("/v1/geo?limit=1000")
        }),
        case("geoListLayers", "limit 1000, from the middle", move |_| {
            get(format!(
                "/v1/geo?limit=1000&after={}",
                "l".repeat(122) + "5"
            ))
        }),
        case("ratelimitCheck", "gcra, largest numbers", |_| {
            post(
                "/v1/ratelimit/check",
                json!({"key": "g", "max_burst": 1_000_000, "count_per_period": 1_000_000,
                       "period": 31_536_000, "quantity": 1_000_000}),
            )
        }),
        case(
            "ratelimitCheck",
            "sliding_window, trims 10,000 and adds 1,000",
            |i| {
                post(
                    "/v1/ratelimit/check",
                    json!({"key": format!("sw{i}"), "algorithm": "sliding_window",
                       "count_per_period": 10_000, "period": 2, "quantity": 1000}),
                )
            },
        ),
        case("ratelimitCheck", "fixed_window", |_| {
            post(
                "/v1/ratelimit/check",
                json!({"key": "f", "algorithm": "fixed_window", "count_per_period": 1_000_000,
                       "period": 31_536_000, "quantity": 1_000_000}),
            )
        }),
        case("dedupReserve", "largest first layer", |i| {
            admin(put(
                format!("/v1/dedup/r{i}"),
                json!({"capacity": 50_000_000, "error_rate": 0.01}),
            ))
        }),
        case("dedupAdd", "1,000 items of 480 bytes, deepest layout", {
            let it = items_max.clone();
            move |i| {
                post(
                    "/v1/dedup/deep/items",
                    json!({"items": it.iter().map(|s| format!("{i}{s}")).collect::<Vec<_>>()}),
                )
            }
        }),
        case("dedupAdd", "1,000 items into a new filter", {
            let it = items_max.clone();
            move |i| post(format!("/v1/dedup/auto{i}/items"), json!({"items": it}))
        }),
        case("dedupAdd", "1,000 items into a 64 MiB layer of pieces", {
            let it = items_max.clone();
            move |i| {
                post(
                    "/v1/dedup/r0/items",
                    json!({"items": it.iter().map(|s| format!("{i}{s}")).collect::<Vec<_>>()}),
                )
            }
        }),
        case("dedupCheck", "1,000 items in a 64 MiB layer of pieces", {
            let it = items_max.clone();
            move |i| {
                post(
                    "/v1/dedup/r0/check",
                    json!({"items": it.iter().map(|s| format!("{i}{s}")).collect::<Vec<_>>()}),
                )
            }
        }),
        case("dedupCheck", "1,000 items, deepest layout", {
            let it = items_max.clone();
            move |_| post("/v1/dedup/deep/check", json!({"items": it}))
        }),
        case("dedupFilter", "1,000 items, deepest layout", {
            let it = items_max.clone();
            move |i| {
                post(
                    "/v1/dedup/deep/filter",
                    json!({"items": it.iter().map(|s| format!("f{i}{s}")).collect::<Vec<_>>()}),
                )
            }
        }),
        case("dedupInfo", "", |_| get("/v1/dedup/deep")),
        case("locksAcquire", "", |i| {
            post(
                format!("/v1/locks/l{i}"),
                json!({"owner": "a", "ttl_ms": 60_000}),
            )
        }),
        case("locksInspect", "", |_| get("/v1/locks/l0")),
        case("locksRenew", "", |i| {
            post(
                format!("/v1/locks/l{i}/renew"),
                json!({"owner": "a", "token": 1, "ttl_ms": 60_000}),
            )
        }),
        case("locksRelease", "", |i| {
            delete(format!("/v1/locks/l{i}?owner=a&token=1"))
        }),
        case("queuesEnqueue", "64 KiB payload", move |_| {
            post("/v1/queues/q/jobs", json!({"payload": payload}))
        }),
        case("queuesClaim", "100 jobs of 64 KiB", |_| {
            post(
                "/v1/queues/q/claim",
                json!({"max": 100, "visibility_ms": 1000}),
            )
        }),
        case("queuesAck", "", move |i| {
            let (id, receipt) = &receipts[i];
            post(
                format!("/v1/queues/qa/jobs/{id}/ack"),
                json!({"receipt": receipt}),
            )
        }),
        case("queuesCancel", "", |_| delete("/v1/queues/q/jobs/nope")),
        case("queuesStats", "", |_| get("/v1/queues/q")),
        case("queuesDead", "limit 1000", |_| {
            get("/v1/queues/q/dead?limit=1000")
        }),
        // A page is one SCAN of COUNT 1000 and a pipeline of TYPE, MEMORY USAGE … SAMPLES 5 and
        // PTTL over what it found: the keys above include the largest of every kind (a 100,000-
        // place layer, dense HyperLogLogs, a 64 MiB filter layer in pieces, 2,000 orders, a
        // queue of 64 KiB jobs), each measured by sampling.
        case("inventoryKeys", "count 1000, every kind", |_| {
            admin(get("/v1/admin/keys?count=1000"))
        }),
        case("inventoryKeys", "count 1000, one kind", |_| {
            admin(get("/v1/admin/keys?kind=uv&count=1000"))
        }),
        case(
            "inventoryBigKeys",
            "limit 100, a budget of 5,000 keys",
            |_| admin(get("/v1/admin/keys/big?limit=100")),
        ),
    ];

    // Every operation of the document has a worst case here, so a new route needs one.
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|ops| ops.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap().to_owned())
        .collect();
    let covered: BTreeSet<String> = cases.iter().map(|c| c.op.to_owned()).collect();
    assert_eq!(
        documented.difference(&covered).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "operations without a worst case in tests/redis_time.rs"
    );

    let factor = machine_factor(&server, &redis).await;
    let budget = scaled(BUDGET_US, factor);
    println!("this machine: {factor:.2}x the reference GEOADD, budget {budget} µs");
    let mut table: BTreeMap<&str, (u64, String, String, usize)> = BTreeMap::new();
    let mut over = Vec::new();
    for c in &cases {
        let mut best: Option<(u64, String, u64, usize)> = None;
        // A few repeats; more (reusing the repeats' inputs) only while the best is over the
        // budget, so noise has to hit every one of up to RETRIES runs to fail the case.
        for i in 0..RETRIES {
            if i >= REPEATS && best.as_ref().is_some_and(|b| b.0 <= budget) {
                break;
            }
            let r = (c.make)(i % REPEATS);
            let (us, what, raw, calls) = measure(&gw, &redis, &r).await;
            if c.op == "dedupReserve" && i % REPEATS > 0 {
                // Only r0 is used later; another ~60 MiB filter would just hold memory.
                let filter = format!("{prefix}bf:{{r{}}}", i % REPEATS);
                let mut keys: Vec<String> = (0..30).map(|n| format!("{filter}:0:{n}")).collect();
                keys.push(filter);
                let _: u64 = redis.unlink(keys).await.unwrap();
            }
            if best.as_ref().is_none_or(|b| us < b.0) {
                best = Some((us, what, raw, calls));
            }
        }
        let (us, what, raw, calls) = best.unwrap();
        println!(
            "{:<26} {:<48} {us:>7} µs (raw max {raw:>7})  {calls:>5} calls  {what}",
            c.op, c.label
        );
        if us > budget {
            over.push(format!("{} ({}): {us} µs in {what}", c.op, c.label));
        }
        let row = table
            .entry(c.op)
            .or_insert((0, String::new(), String::new(), 0));
        if us >= row.0 {
            *row = (us, c.label.to_owned(), what, calls);
        }
    }
    println!("\n| operation | worst case | slowest call (µs) | calls |\n|---|---|---:|---:|");
    for (op, (us, label, _, calls)) in &table {
        println!("| `{op}` | {label} | {us} | {calls} |");
    }
    // A layer kept in pieces never forgets an item, and really is in pieces.
    let added: Vec<String> = items_max.iter().map(|s| format!("0{s}")).collect();
    let (s, body) = send(&gw, &post("/v1/dedup/r0/check", json!({"items": added}))).await;
    assert_eq!(s, 200, "{body}");
    assert!(
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["seen"] == true),
        "no false negatives"
    );
    let exists = |key: String| {
        let redis = redis.clone();
        async move { redis.exists::<u64, _>(key).await.unwrap() }
    };
    // The Lua engine's pieces; with a Bloom module loaded (`GATEWAY_TEST_MODULE`) the filters
    // are the module's, and every case above ran on its engine instead.
    if common::server_module().is_none() {
        assert_eq!(exists(format!("{prefix}bf:{{r0}}:0")).await, 0);
        // 50 million items at 1% (0.8% in the first layer): ~60 MiB, 30 pieces.
        assert_eq!(exists(format!("{prefix}bf:{{r0}}:0:0")).await, 1);
        assert_eq!(exists(format!("{prefix}bf:{{r0}}:0:29")).await, 1);
        assert_eq!(exists(format!("{prefix}bf:{{r0}}:0:30")).await, 0);
    }

    // The searches paged in the gateway answer what GEOSEARCH answers on the same data.
    for (layer, query, args) in [
        (
            "city",
            "lon=116.4&lat=39.9&radius=40000&unit=km&count=20",
            "FROMLONLAT 116.4 39.9 BYRADIUS 40000 km ASC COUNT 20",
        ),
        (
            "city",
            "lon=116.4&lat=39.9&radius=40000&unit=km&count=1000",
            "FROMLONLAT 116.4 39.9 BYRADIUS 40000 km ASC COUNT 1000",
        ),
        (
            "city",
            "lon=117.5&lat=39.9&radius=5000&unit=km&count=20",
            "FROMLONLAT 117.5 39.9 BYRADIUS 5000 km ASC COUNT 20",
        ),
        (
            "city",
            "lon=116.4&lat=39.9&shape=box&width=2&height=1&unit=km&count=50",
            "FROMLONLAT 116.4 39.9 BYBOX 2 1 km ASC COUNT 50",
        ),
        (
            "big",
            "lon=10&lat=47&radius=50&unit=km&count=20",
            "FROMLONLAT 10 47 BYRADIUS 50 km ASC COUNT 20",
        ),
        (
            "big",
            "lon=10&lat=47&radius=40000&unit=km&count=1000&order=desc",
            "FROMLONLAT 10 47 BYRADIUS 40000 km DESC COUNT 1000",
        ),
        (
            "big",
            "lon=10&lat=47&radius=40000&unit=km&count=1000",
            "FROMLONLAT 10 47 BYRADIUS 40000 km ASC COUNT 1000",
        ),
        (
            "big",
            "lon=-150&lat=-60&radius=40000&unit=km&count=20",
            "FROMLONLAT -150 -60 BYRADIUS 40000 km ASC COUNT 20",
        ),
        (
            "big",
            "lon=12&lat=50&radius=700&unit=km&count=1000&order=desc",
            "FROMLONLAT 12 50 BYRADIUS 700 km DESC COUNT 1000",
        ),
        (
            "big",
            "lon=10&lat=47&shape=box&width=3000&height=1000&unit=mi&count=1000&order=desc",
            "FROMLONLAT 10 47 BYBOX 3000 1000 mi DESC COUNT 1000",
        ),
        (
            "big",
            "lon=179.9&lat=10&radius=20000&unit=km&count=300",
            "FROMLONLAT 179.9 10 BYRADIUS 20000 km ASC COUNT 300",
        ),
    ] {
        let (s, body) = send(&gw, &get(format!("/v1/geo/{layer}/nearby?{query}"))).await;
        assert_eq!(s, 200, "{body}");
        let ours: Vec<(String, f64)> = body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["member"].as_str().unwrap().to_owned(),
                    h["distance"].as_f64().unwrap(),
                )
            })
            .collect();
        let mut cmd_args: Vec<String> = vec![format!("{prefix}geo:{{{layer}}}")];
        cmd_args.extend(args.split(' ').map(str::to_owned));
        cmd_args.push("WITHDIST".to_owned());
        let theirs: Vec<(String, String)> = redis
            .custom(
                fred::types::CustomCommand::new_static(
                    "GEOSEARCH",
                    fred::types::ClusterHash::FirstKey,
                    false,
                ),
                cmd_args,
            )
            .await
            .unwrap();
        let theirs: Vec<(String, f64)> = theirs
            .into_iter()
            .map(|(m, d)| (m, d.parse().unwrap()))
            .collect();
        let distances = |v: &[(String, f64)]| v.iter().map(|h| h.1).collect::<Vec<_>>();
        assert_eq!(distances(&ours), distances(&theirs), "{query}");
        // Equal distances may come in either order; the members at each distance agree.
        let members = |v: &[(String, f64)]| {
            let last = v.last().map(|h| h.1);
            v.iter()
                .filter(|h| Some(h.1) != last)
                .map(|h| h.0.clone())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(members(&ours), members(&theirs), "{query}");
    }

    let used: String = server.cli(&["info", "memory"]).unwrap_or_default();
    let peak = used
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_peak_human:"))
        .unwrap_or("?")
        .trim()
        .to_owned();
    println!("\nRedis memory peak: {peak}");
    assert!(
        over.is_empty(),
        "requests that held Redis over {budget} µs: {over:#?}"
    );
}

/// How much longer than where the budget was set a plain `GEOADD` of 1,000 moves in a layer of
/// 100,000 takes this server (the least of three, `INFO commandstats`), at least 1. The layer
/// is its own, made for this and removed after.
async fn machine_factor(server: &RedisProcess, redis: &fred::prelude::Client) -> f64 {
    let key = "machine-factor:{geo}";
    let geoadd = |args: Vec<String>| async move {
        let _: i64 = redis
            .custom(
                fred::types::CustomCommand::new_static(
                    "GEOADD",
                    fred::types::ClusterHash::FirstKey,
                    false,
                ),
                args,
            )
            .await
            .unwrap();
    };
    let batch = |from: usize, salt: u64| {
        let mut args = vec![key.to_owned()];
        for i in from..from + 1000 {
            args.push((-10.0 + 40.0 * spread(i, salt)).to_string());
            args.push((35.0 + 25.0 * spread(i, salt + 1)).to_string());
            args.push(format!("p{i}"));
        }
        args
    };
    for from in (0..GEO_PLACES).step_by(1000) {
        geoadd(batch(from, 1)).await;
    }
    let mut best = u64::MAX;
    for round in 0..3 {
        let moves = batch(round * 1000, 7);
        let before = command_time(server, "geoadd").1;
        geoadd(moves).await;
        best = best.min(command_time(server, "geoadd").1.saturating_sub(before));
    }
    let _: u64 = redis.unlink(key).await.unwrap();
    (best as f64 / REFERENCE_GEOADD_US as f64).max(1.0)
}

/// `budget_us` on a machine `factor` times slower than the reference ([`machine_factor`]).
fn scaled(budget_us: u64, factor: f64) -> u64 {
    (budget_us as f64 * factor) as u64
}

/// Redis's own time in all `EVALSHA` runs so far, µs, and how many (`INFO commandstats`: a
/// slowlog at threshold 0 would also log, and time, every command a script makes).
fn evalsha_time(redis: &RedisProcess) -> (u64, u64) {
    command_time(redis, "evalsha")
}

/// How many runs of `command` (lower case) so far and Redis's own time in them, µs
/// (`INFO commandstats`).
fn command_time(redis: &RedisProcess, command: &str) -> (u64, u64) {
    let stats = redis.cli(&["info", "commandstats"]).unwrap();
    let prefix = format!("cmdstat_{command}:");
    let line = stats
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or("calls=0,usec=0");
    let field = |name: &str| {
        line.split(',')
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("calls="), field("usec="))
}

/// The largest lock script runs the gateway makes (up to 64 acquisitions, 64 renewals or 64
/// releases that a worker took up in one turn, `src/locks/redis/group.rs`) stay within the
/// budget: 64 fresh names, 64 acquisitions of one name, 64 renewals, 64 releases that each
/// free and announce.
/// Called directly, since a run's make-up through the gateway depends on timing; the least of
/// a few runs counts, as above.
#[tokio::test]
async fn the_largest_grouped_lock_runs_stay_within_the_budget() {
    let _turn = TIMED.lock().await;
    let (redis, client, acquire) =
        common::fred_on_private_redis(include_str!("../src/locks/redis/lock_acquire.lua")).await;
    let release: String = client
        .script_load(include_str!("../src/locks/redis/lock_release.lua"))
        .await
        .unwrap();
    let renew: String = client
        .script_load(include_str!("../src/locks/redis/lock_renew.lua"))
        .await
        .unwrap();
    // 64 names and owners as long as the 16 KiB bound of a run lets 64 of them be.
    let name = |run: usize, i: usize| format!("{run:04}-{i:02}-{}", "n".repeat(32));
    let owner = "o".repeat(40);
    let mut worst = BTreeMap::new();
    for run in 0..REPEATS * 2 {
        let mut time = |what: &'static str, us: u64| {
            let best = worst.entry(what).or_insert(u64::MAX);
            *best = (*best).min(us);
        };
        let acquisitions = |names: &[String]| {
            let mut keys = Vec::new();
            let mut args = vec!["3600000".to_owned()];
            for n in names {
                keys.push(format!("lk:{{{n}}}"));
                args.extend([owner.clone(), "60000".to_owned()]);
            }
            (keys, args)
        };
        let fresh: Vec<String> = (0..64).map(|i| name(run, i)).collect();
        let hot: Vec<String> = (0..64).map(|_| name(run, 99)).collect();
        for (what, names) in [("64 fresh names", &fresh), ("64 on one name", &hot)] {
            let (keys, args) = acquisitions(names);
            let before = evalsha_time(&redis);
            let _: fred::types::Value = client.evalsha(&acquire, keys, args).await.unwrap();
            let after = evalsha_time(&redis);
            assert_eq!(after.0, before.0 + 1);
            time(what, after.1 - before.1);
        }
        let held: Vec<(String, String)> = client
            .mget::<Vec<String>, _>(
                fresh
                    .iter()
                    .map(|n| format!("lk:{{{n}}}"))
                    .collect::<Vec<_>>(),
            )
            .await
            .unwrap()
            .into_iter()
            .zip(&fresh)
            .map(|(v, n)| (n.clone(), v.split(' ').nth(1).unwrap().to_owned()))
            .collect();
        let mut keys = Vec::new();
        let mut args = vec!["3600000".to_owned()];
        for (n, token) in &held {
            keys.push(format!("lk:{{{n}}}"));
            args.extend([owner.clone(), token.clone(), "60000".to_owned()]);
        }
        let before = evalsha_time(&redis);
        let renewed: Vec<i64> = client.evalsha(&renew, keys, args).await.unwrap();
        assert_eq!(renewed.len(), 65, "{renewed:?}");
        assert!(renewed[1..].iter().all(|r| *r == 1), "{renewed:?}");
        time("64 renewals", evalsha_time(&redis).1 - before.1);
        let mut keys = Vec::new();
        let mut args = vec!["origin".to_owned()];
        for (n, token) in &held {
            keys.push(format!("lk:{{{n}}}"));
            args.extend([owner.clone(), token.clone(), format!("lk:{{{n}}}:released")]);
        }
        let before = evalsha_time(&redis);
        let released: Vec<i64> = client.evalsha(&release, keys, args).await.unwrap();
        assert!(released.iter().all(|r| *r == 1), "{released:?}");
        time("64 releases", evalsha_time(&redis).1 - before.1);
    }
    println!("largest grouped lock runs, µs: {worst:?}");
    for (what, us) in worst {
        assert!(us <= BUDGET_US, "{what}: {us} µs");
    }
}

/// The gateway counts unions from the raw HyperLogLog strings; on the same keys it must answer
/// exactly what Redis's own PFCOUNT answers, for sparse and dense encodings alike, and a merge
/// must leave the target holding what PFMERGE would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_counts_equal_pfcount() {
    let _turn = TIMED.lock().await;
    let settings = common::settings(Backend::Redis);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let redis = Builder::from_config(Config::from_url(&common::shared_redis().url()).unwrap())
        .build()
        .unwrap();
    redis.init().await.unwrap();
    // a: sparse and tiny; b: dense; c: sparse near the 3,000-byte limit.
    let sizes: [(&str, [usize; 2]); 3] = [("a", [40, 70]), ("b", [6000, 3500]), ("c", [900, 1200])];
    for (page, per_day) in sizes {
        for (back, n) in per_day.into_iter().enumerate() {
            for part in 0..n.div_ceil(1000) {
                let visitors: Vec<String> = (part * 1000..n.min((part + 1) * 1000))
                    .map(|v| format!("{}-{v}", v % 3))
                    .collect();
                let (s, b) = send(
                    &gw,
                    &post(
                        format!("/v1/uv/{page}"),
                        json!({"date": day(back as u64), "visitors": visitors}),
                    ),
                )
                .await;
                assert_eq!(s, 200, "{b}");
            }
        }
    }
    let key = |page: &str, back: u64| format!("{prefix}uv:{{{page}}}:{}", day(back));
    let pfcount = |keys: Vec<String>| {
        let redis = redis.clone();
        async move { redis.pfcount::<u64, _>(keys).await.unwrap() }
    };
    let encodings: Vec<String> = {
        let mut out = Vec::new();
        for (page, _) in sizes {
            let raw: Vec<u8> = redis.get(key(page, 0)).await.unwrap();
            out.push(format!("{page}:{}", raw[4]));
        }
        out
    };
    assert_eq!(
        encodings,
        ["a:1", "b:0", "c:1"],
        "both encodings are covered"
    );
    let (from, to) = (day(1), day(0));
    for (page, _) in sizes {
        let (_, body) = send(&gw, &get(format!("/v1/uv/{page}?from={from}&to={to}"))).await;
        assert_eq!(body["uv"], pfcount(vec![key(page, 0), key(page, 1)]).await);
        assert_eq!(body["daily"][0]["uv"], pfcount(vec![key(page, 1)]).await);
        assert_eq!(body["daily"][1]["uv"], pfcount(vec![key(page, 0)]).await);
    }
    let all: Vec<String> = ["a", "b", "c"]
        .iter()
        .flat_map(|p| [key(p, 0), key(p, 1)])
        .collect();
    let (_, body) = send(&gw, &get(format!("/v1/uv?pages=a,b,c&from={from}&to={to}"))).await;
    assert_eq!(body["uv"], pfcount(all.clone()).await);

    let (s, body) = send(
        &gw,
        &post(
            "/v1/uv/merge",
            json!({"sources": ["a", "b", "c"], "into": "m", "from": from, "to": to}),
        ),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let _: () = redis
        .pfmerge("expected0", vec![key("a", 0), key("b", 0), key("c", 0)])
        .await
        .unwrap();
    assert_eq!(
        pfcount(vec![key("m", 0)]).await,
        pfcount(vec!["expected0".to_owned()]).await
    );
    assert_eq!(body["uv"], pfcount(all).await);
    let _: i64 = redis.del("expected0").await.unwrap();

    // Small sources merge into a small (sparse) target, as PFMERGE leaves it.
    let (s, body) = send(
        &gw,
        &post(
            "/v1/uv/merge",
            json!({"sources": ["a"], "into": "ms", "from": from, "to": to}),
        ),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    let raw: Vec<u8> = redis.get(key("ms", 0)).await.unwrap();
    assert_eq!(raw[4], 1, "sparse");
    assert_eq!(
        pfcount(vec![key("ms", 0)]).await,
        pfcount(vec![key("a", 0)]).await
    );
}

/// Redis's time for one grouped queue script run, in µs: what a burst's run may hold Redis
/// for. Budgeted well under [`BUDGET_US`]: a run carries up to 64 requests.
const GROUPED_BUDGET_US: u64 = 1_000;

/// The grouped queue scripts stay under a millisecond per run at their bounds: 64 concurrent
/// enqueues of the largest payload (runs of up to 128 KiB), 64 of small jobs under idempotency
/// keys (runs of up to 32, each record weighing 4 KiB) and 64 concurrent acks; 64 concurrent claims of the largest jobs
/// (runs bounded by the 1 MiB one claim alone may return) stay under the 5 ms rule. On one
/// thread, as the binary's workers run (`src/workers.rs`), so a burst groups. The least of a few repeats counts, as above.
#[tokio::test]
async fn a_grouped_queue_run_holds_redis_under_a_millisecond() {
    let _turn = TIMED.lock().await;
    let (server, gw, redis, _) = slowlogged_gateway().await;
    let factor = machine_factor(&server, &redis).await;
    let grouped_budget = scaled(GROUPED_BUDGET_US, factor);
    const BURST: usize = 64;
    let big = "z".repeat(64 * 1024 - 16);

    // One burst of requests at once: the slowest script run (µs, what) and how many runs.
    async fn burst(gw: &Gateway, redis: &Client, reqs: Vec<Req>) -> (u64, String, usize) {
        redis.slowlog_reset().await.unwrap();
        let replies = futures::future::join_all(reqs.iter().map(|r| send(gw, r))).await;
        for (status, body) in &replies {
            assert!(*status < 300, "{status} {body}");
        }

        let runs: Vec<SlowlogEntry> = slowlog(redis)
            .await
            .into_iter()
            .filter(|e| call_kind(e).starts_with("EVALSHA"))
            .collect();
        let slowest = runs
            .iter()
            .max_by_key(|e| e.duration)
            .map(|e| (e.duration.as_micros() as u64, call_name(e)))
            .unwrap_or_default();
        (slowest.0, slowest.1, runs.len())
    }

    // Claimable jobs of the largest payload, and the small ones claimed for the ack case.
    load(
        &gw,
        (0..BURST * RETRIES)
            .map(|_| post("/v1/queues/gc/jobs", json!({"payload": big})))
            .collect(),
    )
    .await;
    load(
        &gw,
        (0..BURST * RETRIES)
            .map(|i| post("/v1/queues/ga/jobs", json!({"payload": i})))
            .collect(),
    )
    .await;
    let mut to_ack: Vec<(String, String)> = Vec::new();
    while to_ack.len() < BURST * RETRIES {
        let (s, claimed) = send(
            &gw,
            &post(
                "/v1/queues/ga/claim",
                json!({"max": 100, "visibility_ms": 600_000}),
            ),
        )
        .await;
        assert_eq!(s, 200, "{claimed}");
        let jobs = claimed["jobs"].as_array().unwrap();
        assert!(!jobs.is_empty());
        to_ack.extend(jobs.iter().map(|j| {
            (
                j["id"].as_str().unwrap().to_owned(),
                j["receipt"].as_str().unwrap().to_owned(),
            )
        }));
    }

    let mut over = Vec::new();
    for label in [
        "enqueue 64 KiB",
        "enqueue idempotent",
        "claim 64 KiB",
        "ack",
    ] {
        let mut best: Option<(u64, String, usize)> = None;
        for i in 0..RETRIES {
            if i >= REPEATS && best.as_ref().is_some_and(|b| b.0 <= grouped_budget) {
                break;
            }
            let reqs: Vec<Req> = match label {
                "enqueue 64 KiB" => (0..BURST)
                    .map(|_| post("/v1/queues/ge/jobs", json!({"payload": big})))
                    .collect(),
                "enqueue idempotent" => (0..BURST)
                    .map(|n| {
                        let mut r = post("/v1/queues/gi/jobs", json!({"payload": n}));
                        r.idempotency_key = Some(format!("key-{i}-{n}"));
                        r
                    })
                    .collect(),
                "claim 64 KiB" => (0..BURST)
                    .map(|_| post("/v1/queues/gc/claim", json!({"max": 1})))
                    .collect(),
                _ => to_ack
                    .drain(..BURST)
                    .map(|(id, receipt)| {
                        post(
                            format!("/v1/queues/ga/jobs/{id}/ack"),
                            json!({"receipt": receipt}),
                        )
                    })
                    .collect(),
            };
            let got = burst(&gw, &redis, reqs).await;
            if best.as_ref().is_none_or(|b| got.0 < b.0) {
                best = Some(got);
            }
            if label == "ack" && to_ack.len() < BURST {
                break;
            }
        }
        let (us, what, runs) = best.unwrap();
        println!("grouped {label:<20} {us:>7} µs, {runs:>3} runs for {BURST} requests  {what}");
        // Bodies of 64 KiB are read over several turns, so few of them meet in one.
        if label != "enqueue 64 KiB" {
            assert!(
                runs < BURST,
                "{label}: {runs} runs for {BURST} requests: not grouped"
            );
        }
        // A claim run hands out at most what one claim alone may (1 MiB of payloads), and the
        // first claim of a run has all of it: bounded as one claim is, by the 5 ms rule.
        let budget = if label.starts_with("claim") {
            scaled(BUDGET_US, factor)
        } else {
            grouped_budget
        };
        if us > budget {
            over.push(format!("{label}: {us} µs in {what}"));
        }
    }
    assert!(
        over.is_empty(),
        "grouped runs over {grouped_budget} µs ({factor:.2}x the reference machine): {over:?}"
    );
}
