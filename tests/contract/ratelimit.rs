//! Rate-limit check scenarios (docs/api.md "Rate-limit checks"): docs/ratelimit.md's worked examples
//! replayed through HTTP, exactness under concurrency, and nothing stored for refusals.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{self, Backend, Gateway};

crate::contract_tests!(
    fifteen_thirty_sixty_back_to_back,
    refill_after_time_passes,
    zero_one_one,
    five_ten_one,
    quantity_above_and_at_the_limit,
    quantity_zero_peeks_and_leaves_no_key,
    tat_is_stored_in_microseconds_and_expires_when_full,
    two_hundred_concurrent_checks_allow_exactly_ten,
    invalid_parameters_are_refused_and_write_nothing,
    the_caps_are_accepted,
    a_retried_check_spends_once,
);

/// A key no other scenario of this process uses.
fn fresh_key(label: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{label}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A gateway and its key prefix, so scenarios can look at Redis directly. Keys may live as long
/// as the API's ranges allow (`GATEWAY_RATELIMIT_MAX_TTL_S` lifted): these scenarios try the
/// arithmetic at its extremes; tests/whose_resources.rs tries the default cap.
async fn gateway(backend: Backend) -> (Gateway, String) {
    let mut settings = common::settings(backend);
    settings.ratelimit.max_ttl_s = 1 << 50;
    let prefix = settings.key_prefix.clone();
    (Gateway::with_settings(settings).await, prefix)
}

/// Runs `redis-cli` against the backend's server holding `key` (`None` on memory).
fn redis_cli(backend: Backend, args: &[&str]) -> Option<String> {
    let out = match backend {
        Backend::Memory => return None,
        Backend::Redis => common::shared_redis().cli(args),
        Backend::Cluster => {
            let mut cluster_args = vec!["-c"];
            cluster_args.extend_from_slice(args);
            common::shared_cluster().nodes[0].cli(&cluster_args)
        }
    };
    Some(out.expect("redis-cli reaches the server").trim().to_owned())
}

/// Whether the bucket of check key `key` exists in Redis (`None` on memory).
fn stored(backend: Backend, prefix: &str, key: &str) -> Option<bool> {
    let name = format!("{prefix}rl:{{{key}}}");
    redis_cli(backend, &["exists", &name]).map(|n| n == "1")
}

async fn check(gw: &Gateway, key: &str, rate: (u64, u64, u64), quantity: u64) -> Value {
    let (max_burst, count_per_period, period) = rate;
    let (status, body) = gw
        .post(
            "/v1/ratelimit/check",
            json!({"key": key, "max_burst": max_burst, "count_per_period": count_per_period,
                   "period": period, "quantity": quantity}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// A reply as redis-cell's five integers: limited, limit, remaining, retry_after, reset_after.
fn cell(r: &Value) -> [i64; 5] {
    let n = |f: &str| r[f].as_i64().unwrap_or_else(|| panic!("{f} in {r}"));
    [
        i64::from(!r["allowed"].as_bool().expect("allowed")),
        n("limit"),
        n("remaining"),
        n("retry_after"),
        n("reset_after"),
    ]
}

/// Sends `quantities` back to back on a fresh key and returns the replies with an upper bound
/// of the time between the first and the last store clock reading. The worked examples hold
/// only while the whole sequence fits in `window` (less than the smallest rounding margin of
/// the example); on a machine too busy for that the sequence is tried again on a new key.
async fn replay(
    gw: &Gateway,
    rate: (u64, u64, u64),
    quantities: &[u64],
    window: Duration,
) -> (String, Vec<Value>, Duration) {
    for _ in 0..5 {
        let key = fresh_key("seq");
        let start = Instant::now();
        let mut replies = Vec::new();
        for q in quantities {
            replies.push(check(gw, &key, rate, *q).await);
        }
        let elapsed = start.elapsed();
        if elapsed < window {
            return (key, replies, elapsed);
        }
    }
    panic!(
        "could not send {} checks within {window:?}",
        quantities.len()
    );
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64 + 1
}

async fn fifteen_thirty_sixty_back_to_back(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (_, replies, elapsed) =
        replay(&gw, (15, 30, 60), &[1; 17], Duration::from_millis(900)).await;
    let mut expected: Vec<[i64; 5]> = (1..=16).map(|i| [0, 16, 16 - i, -1, 2 * i]).collect();
    expected.push([1, 16, 0, 2, 32]);
    let got: Vec<[i64; 5]> = replies.iter().map(cell).collect();
    assert_eq!(got, expected);
    // The millisecond fields: each call spends 2 s, less the time since the first call.
    for (i, r) in replies.iter().take(16).enumerate() {
        let full = 2000 * (i as i64 + 1);
        let reset = r["reset_after_ms"].as_i64().unwrap();
        assert!(full - ms(elapsed) <= reset && reset <= full, "{i}: {r}");
        assert_eq!(r["retry_after_ms"], -1);
    }
    let last = &replies[16];
    let retry = last["retry_after_ms"].as_i64().unwrap();
    assert!(2000 - ms(elapsed) <= retry && retry <= 2000, "{last}");
}

async fn refill_after_time_passes(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let rate = (15, 30, 60);
    let (key, replies, _) = replay(&gw, rate, &[1; 16], Duration::from_millis(900)).await;
    assert_eq!(cell(&replies[15]), [0, 16, 0, -1, 32]);
    // How long after the first call the store's clock is now, to the millisecond.
    let first = gw.now_ms();
    let probe = check(&gw, &key, rate, 0).await;
    let spent_before_sleep = 32_000 - probe["reset_after_ms"].as_i64().unwrap();
    gw.pass(Duration::from_millis(2100)).await;
    let peek = check(&gw, &key, rate, 0).await;
    let upper = gw.now_ms() - first;
    // The TAT is 32 s after the first call; the store's clock has moved on by the 2.1 s at
    // least and by the time since before the probe (plus what had passed by then) at most.
    let lo = 2100 + spent_before_sleep - 1;
    let hi = upper + 1 + spent_before_sleep + 1;
    let reset_ms = peek["reset_after_ms"].as_i64().unwrap();
    assert!(
        32_000 - hi <= reset_ms && reset_ms <= 32_000 - lo,
        "{peek}, {lo}..{hi}"
    );
    // remaining = floor(elapsed / EI) with EI = 2 s.
    let remaining = peek["remaining"].as_i64().unwrap();
    assert!((lo / 2000..=hi / 2000).contains(&remaining), "{peek}");
    assert!(remaining >= 1, "2.1 s refill one unit: {peek}");
    if hi < 2900 {
        // The common case, exactly docs/ratelimit.md's "after 2.1 s" reply.
        assert_eq!(cell(&peek), [0, 16, 1, -1, 30]);
    }
    // The peeks spent nothing: the refilled units can all be spent at once.
    let spend = check(&gw, &key, rate, remaining as u64).await;
    assert_eq!(spend["allowed"], true, "{spend}");
}

async fn zero_one_one(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (_, replies, _) = replay(&gw, (0, 1, 1), &[1, 1], Duration::from_millis(900)).await;
    let got: Vec<[i64; 5]> = replies.iter().map(cell).collect();
    assert_eq!(got, vec![[0, 1, 0, -1, 1], [1, 1, 0, 1, 1]]);
}

async fn five_ten_one(backend: Backend) {
    let gw = Gateway::start(backend).await;
    // EI is 100 ms: all seven calls must land within the first 99 ms.
    let (_, replies, _) = replay(&gw, (5, 10, 1), &[1; 7], Duration::from_millis(99)).await;
    let mut expected: Vec<[i64; 5]> = (0..6).map(|i| [0, 6, 5 - i, -1, 1]).collect();
    expected.push([1, 6, 0, 1, 1]);
    let got: Vec<[i64; 5]> = replies.iter().map(cell).collect();
    assert_eq!(got, expected);
}

async fn quantity_above_and_at_the_limit(backend: Backend) {
    let (gw, prefix) = gateway(backend).await;
    let (key, replies, _) = replay(&gw, (5, 10, 1), &[7], Duration::from_secs(60)).await;
    assert_eq!(cell(&replies[0]), [1, 6, 6, -1, 0]);
    assert_eq!(replies[0]["retry_after_ms"], -1);
    assert_eq!(replies[0]["reset_after_ms"], 0);
    assert_ne!(
        stored(backend, &prefix, &key),
        Some(true),
        "a refusal wrote"
    );
    // Nothing was spent: the whole limit still fits at once.
    let all = check(&gw, &key, (5, 10, 1), 6).await;
    assert_eq!(cell(&all), [0, 6, 0, -1, 1]);
    assert_ne!(stored(backend, &prefix, &key), Some(false));
    // A quantity above the limit never fits, whatever the bucket holds.
    let never = check(&gw, &key, (5, 10, 1), 1_000_000).await;
    assert_eq!(never["allowed"], false);
    assert_eq!(never["retry_after"], -1);
}

async fn quantity_zero_peeks_and_leaves_no_key(backend: Backend) {
    let (gw, prefix) = gateway(backend).await;
    for (rate, limit) in [
        ((15, 30, 60), 16),
        ((0, 1, 1), 1),
        ((1_000_000, 1, 1), 1_000_001),
    ] {
        let key = fresh_key("peek");
        for _ in 0..2 {
            let peek = check(&gw, &key, rate, 0).await;
            assert_eq!(cell(&peek), [0, limit, limit, -1, 0]);
            assert_eq!(peek["retry_after_ms"], -1);
            assert_eq!(peek["reset_after_ms"], 0);
            assert_ne!(stored(backend, &prefix, &key), Some(true), "a peek wrote");
        }
    }
    // A peek on a used bucket reports without spending.
    let key = fresh_key("peek-used");
    check(&gw, &key, (15, 30, 60), 3).await;
    for _ in 0..3 {
        let peek = check(&gw, &key, (15, 30, 60), 0).await;
        assert_eq!(peek["remaining"], 13, "{peek}");
        assert_eq!(peek["reset_after"], 6, "{peek}");
    }
}

async fn tat_is_stored_in_microseconds_and_expires_when_full(backend: Backend) {
    let (gw, prefix) = gateway(backend).await;
    let key = fresh_key("stored");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let reply = check(&gw, &key, (15, 30, 60), 3).await;
    assert_eq!(cell(&reply), [0, 16, 13, -1, 6]);
    let name = format!("{prefix}rl:{{{key}}}");
    let (Some(tat), Some(pttl)) = (
        redis_cli(backend, &["get", &name]),
        redis_cli(backend, &["pttl", &name]),
    ) else {
        return; // memory: covered by the peek scenarios
    };
    // Whole microseconds since the epoch, 6 s after the call.
    let tat: i128 = tat.parse().unwrap_or_else(|_| panic!("TAT {tat:?}"));
    let expected = before.as_micros() as i128 + 6_000_000;
    assert!(
        (expected - 5_000_000..expected + 5_000_000).contains(&tat),
        "{tat}"
    );
    // Expires when the bucket is full again: at most the reply's reset_after_ms from the call.
    let pttl: i64 = pttl.parse().unwrap();
    let reset_ms = reply["reset_after_ms"].as_i64().unwrap();
    assert!(0 < pttl && pttl <= reset_ms, "PTTL {pttl} vs {reply}");

    // Something that is not a TAT (garbage, another type) counts as a missing key.
    for (write, garbage) in [
        ("set", "not-a-number"),
        ("set", "1e400"),
        ("set", "1234567890123456789012"),
        ("hset", "f"),
    ] {
        let key = fresh_key("garbage");
        let name = format!("{prefix}rl:{{{key}}}");
        let mut args = vec![write, name.as_str(), garbage];
        if write == "hset" {
            args.push("v");
        }
        redis_cli(backend, &args);
        let reply = check(&gw, &key, (15, 30, 60), 1).await;
        assert_eq!(cell(&reply), [0, 16, 15, -1, 2], "{garbage}");
        let tat = redis_cli(backend, &["get", &name]).unwrap();
        assert!(
            tat.len() == 16 && tat.bytes().all(|b| b.is_ascii_digit()),
            "{tat}"
        );
    }
}

async fn two_hundred_concurrent_checks_allow_exactly_ten(backend: Backend) {
    // This asserts exactness, not latency: on a busy machine 200 requests at once in a debug
    // build can take longer than the default 1 s store timeout to be answered.
    let mut settings = common::settings(backend);
    settings.store_timeout = Duration::from_secs(20);
    let gw = Gateway::with_settings(settings).await;
    let key = fresh_key("crowd");
    let calls = (0..200).map(|_| check(&gw, &key, (9, 1, 60), 1));
    let replies = futures::future::join_all(calls).await;
    let allowed: Vec<&Value> = replies.iter().filter(|r| r["allowed"] == true).collect();
    assert_eq!(allowed.len(), 10);
    // Each allowed call saw a different bucket level: remaining 9, 8, ..., 0.
    let mut remaining: Vec<i64> = allowed
        .iter()
        .map(|r| r["remaining"].as_i64().unwrap())
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (0..10).collect::<Vec<_>>());
    for r in replies.iter().filter(|r| r["allowed"] == false) {
        assert_eq!(r["remaining"], 0, "{r}");
        let retry = r["retry_after"].as_i64().unwrap();
        assert!((1..=60).contains(&retry), "{r}");
    }
}

async fn invalid_parameters_are_refused_and_write_nothing(backend: Backend) {
    let (gw, prefix) = gateway(backend).await;
    let key = fresh_key("invalid");
    let good =
        json!({"key": key, "max_burst": 1, "count_per_period": 1, "period": 60, "quantity": 1});
    let with = |field: &str, value: Value| {
        let mut body = good.clone();
        body[field] = value;
        body
    };
    let without = |field: &str| {
        let mut body = good.clone();
        body.as_object_mut().unwrap().remove(field);
        body
    };
    let bad = [
        with("max_burst", json!(-1)),
        with("max_burst", json!(1_000_001)),
        with("max_burst", json!(1.5)),
        with("max_burst", json!("1")),
        with("max_burst", json!(null)),
        with("count_per_period", json!(0)),
        with("count_per_period", json!(1_000_001)),
        with("count_per_period", json!(-5)),
        with("period", json!(0)),
        with("period", json!(31_536_001)),
        with("period", json!(2.5)),
        with("period", json!(u64::MAX)),
        with("period", json!(1e30)),
        with("quantity", json!(-1)),
        with("quantity", json!(1_000_001)),
        with("quantity", json!(0.5)),
        with("key", json!("")),
        with("key", json!("a b")),
        with("key", json!("rl:{x}")),
        with("key", json!("k".repeat(129))),
        with("key", json!(42)),
        with("extra", json!(1)),
        without("key"),
        without("max_burst"),
        without("count_per_period"),
        without("period"),
        json!([]),
        json!("check"),
        // Bodies are objects; an array in field order is not one.
        json!(["gcra", key, 1, 1, 60, 1]),
    ];
    for body in bad {
        let (status, problem) = gw.post("/v1/ratelimit/check", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument", "{body}");
    }
    let (status, problem) = gw
        .send(
            gw.client
                .post(gw.url("/v1/ratelimit/check"))
                .header("content-type", "application/json")
                .body("{\"key\": \"k\", "),
        )
        .await;
    assert_eq!(
        (status.as_u16(), problem["code"].as_str()),
        (400, Some("invalid_argument"))
    );
    assert_ne!(
        stored(backend, &prefix, &key),
        Some(true),
        "an invalid request wrote"
    );
    // The bucket is untouched: its first real call finds it full.
    let first = check(&gw, &key, (1, 1, 60), 0).await;
    assert_eq!(cell(&first), [0, 2, 2, -1, 0]);
    // quantity defaults to 1.
    let (status, body) = gw.post("/v1/ratelimit/check", without("quantity")).await;
    assert_eq!(status, 200);
    assert_eq!(cell(&body), [0, 2, 1, -1, 60]);
}

async fn the_caps_are_accepted(backend: Backend) {
    let (gw, _) = gateway(backend).await;
    let key = fresh_key("caps");
    let rate = (1_000_000, 1, 31_536_000);
    let first = check(&gw, &key, rate, 1_000_000).await;
    assert_eq!(first["allowed"], true, "{first}");
    assert_eq!(first["limit"], 1_000_001);
    assert_eq!(first["remaining"], 1);
    let reset = first["reset_after"].as_i64().unwrap();
    assert!(
        (31_535_999_999_990..=31_536_000_000_000).contains(&reset),
        "{first}"
    );
    let start = Instant::now();
    let second = check(&gw, &key, rate, 1).await;
    let elapsed = start.elapsed();
    assert_eq!(second["allowed"], true, "{second}");
    assert_eq!(second["remaining"], 0, "{second}");
    // Exact at a million years: one more year, less the time between the calls.
    let first_ms = first["reset_after_ms"].as_i64().unwrap();
    let second_ms = second["reset_after_ms"].as_i64().unwrap();
    let year_ms = 31_536_000_000;
    assert!(
        first_ms + year_ms - ms(elapsed) - 1000 <= second_ms && second_ms <= first_ms + year_ms,
        "{first} then {second}"
    );
    let third = check(&gw, &key, rate, 1).await;
    assert_eq!(third["allowed"], false, "{third}");
    let smallest = check(&gw, &fresh_key("caps"), (0, 1_000_000, 1), 1).await;
    assert_eq!(cell(&smallest), [0, 1, 0, -1, 0]);
    assert_eq!(smallest["reset_after_ms"], 1);
}

/// A check under an `Idempotency-Key`: status, whether replayed, body.
async fn check_once(gw: &Gateway, body: &Value, key: &str) -> (u16, bool, Value) {
    gw.post_once("/v1/ratelimit/check", key, body).await
}

/// docs/api.md "Conventions": a consuming check retried under the same key answers the first
/// decision and spends nothing more; the same key for another check is 422.
async fn a_retried_check_spends_once(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = format!("idem-{}", common::unique_prefix().replace(':', ""));
    let body =
        json!({"key": key, "max_burst": 4, "count_per_period": 1, "period": 60, "quantity": 2});
    let (status, replayed, first) = check_once(&gw, &body, "retry-a").await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(first["remaining"], 3);
    for _ in 0..3 {
        let (status, replayed, again) = check_once(&gw, &body, "retry-a").await;
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again, first, "the first decision, exactly");
    }
    // Only the first spent: a fresh check sees 3 left, and spends 2 more.
    let fresh = check(&gw, &key, (4, 1, 60), 2).await;
    assert_eq!(fresh["remaining"], 1, "{fresh}");
    let mut other = body.clone();
    other["quantity"] = json!(1);
    let (status, _, problem) = check_once(&gw, &other, "retry-a").await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("unprocessable"))
    );
    // Repeats sent at once: exactly one spends, every other replays its decision.
    let mut once = body.clone();
    once["key"] = json!(format!("{key}-at-once"));
    let replies =
        futures::future::join_all((0..12).map(|_| check_once(&gw, &once, "retry-b"))).await;
    crate::applied_once(&replies, 200);
    let after = check(&gw, &format!("{key}-at-once"), (4, 1, 60), 0).await;
    assert_eq!(after["remaining"], 3, "spent once: {after}");
}
