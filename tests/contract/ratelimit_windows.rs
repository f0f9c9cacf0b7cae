//! The simple limiters of `POST /v1/ratelimit/check` (docs/api.md `algorithm`): the sliding log and
//! the fixed window. Expected replies are exact where the store's clock cannot change them (a
//! fresh unit's reset is the whole period) and otherwise checked against each other; time is
//! only ever waited for as long as a reply said to wait.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{self, Backend, Gateway};

crate::contract_tests!(
    sliding_window_admits_the_limit_and_names_the_wait,
    sliding_window_frees_a_unit_once_its_time_is_up,
    fixed_window_admits_the_limit_per_window,
    fixed_window_comes_back_at_the_window_end,
    two_hundred_concurrent_checks_admit_exactly_the_limit,
    algorithms_keep_separate_limits,
    retried_window_checks_spend_once,
    window_parameters_are_checked,
    window_keys_expire,
);

fn fresh_key(label: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{label}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn body(algorithm: &str, key: &str, count: u64, period: u64, quantity: u64) -> Value {
    json!({"algorithm": algorithm, "key": key, "count_per_period": count, "period": period,
           "quantity": quantity})
}

async fn check(gw: &Gateway, algorithm: &str, key: &str, count: u64, period: u64, q: u64) -> Value {
    let (status, reply) = gw
        .post(
            "/v1/ratelimit/check",
            body(algorithm, key, count, period, q),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    reply
}

fn n(r: &Value, f: &str) -> i64 {
    r[f].as_i64().unwrap_or_else(|| panic!("{f} in {r}"))
}

/// (allowed, limit, remaining, retry_after_ms is -1).
fn summary(r: &Value) -> (bool, i64, i64, bool) {
    (
        r["allowed"].as_bool().expect("allowed"),
        n(r, "limit"),
        n(r, "remaining"),
        n(r, "retry_after_ms") == -1,
    )
}

async fn sliding_window_admits_the_limit_and_names_the_wait(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = fresh_key("sw");
    // A peek on an empty log: everything left, nothing to reset.
    let peek = check(&gw, "sliding_window", &key, 3, 60, 0).await;
    assert_eq!(summary(&peek), (true, 3, 3, true));
    assert_eq!(
        (n(&peek, "reset_after_ms"), n(&peek, "reset_after")),
        (0, 0)
    );
    for left in [2, 1, 0] {
        let r = check(&gw, "sliding_window", &key, 3, 60, 1).await;
        assert_eq!(summary(&r), (true, 3, left, true), "{r}");
        // The unit just admitted is the newest: the log empties a whole period from now.
        assert_eq!(
            (n(&r, "reset_after_ms"), n(&r, "reset_after")),
            (60_000, 60)
        );
        assert_eq!(n(&r, "retry_after"), -1);
    }
    let denied = check(&gw, "sliding_window", &key, 3, 60, 1).await;
    assert_eq!(summary(&denied), (false, 3, 0, false));
    // The wait is until the oldest unit leaves, the reset until the newest does.
    let (retry, reset) = (n(&denied, "retry_after_ms"), n(&denied, "reset_after_ms"));
    assert!(0 < retry && retry <= reset && reset <= 60_000, "{denied}");
    // More than the limit never fits.
    let never = check(&gw, "sliding_window", &key, 3, 60, 4).await;
    assert_eq!(summary(&never), (false, 3, 0, true));
}

async fn sliding_window_frees_a_unit_once_its_time_is_up(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = fresh_key("sw-time");
    assert!(check(&gw, "sliding_window", &key, 2, 1, 1).await["allowed"] == true);
    assert!(check(&gw, "sliding_window", &key, 2, 1, 1).await["allowed"] == true);
    let denied = check(&gw, "sliding_window", &key, 2, 1, 1).await;
    assert_eq!(denied["allowed"], false, "{denied}");
    let wait = n(&denied, "retry_after_ms");
    assert!((1..=1_000).contains(&wait), "{denied}");
    // However long the machine takes, the store's clock has moved at least this far.
    gw.pass(Duration::from_millis(wait as u64)).await;
    let again = check(&gw, "sliding_window", &key, 2, 1, 1).await;
    assert_eq!(again["allowed"], true, "{again}");
}

/// Runs `f` on fresh keys until one run stays inside one fixed window (the window's end, as
/// each reply reports it, did not move), so the expectations hold whatever the wall clock did.
async fn within_one_window<F, Fut>(mut f: F) -> Vec<Value>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Vec<Value>>,
{
    for _ in 0..5 {
        let replies = f(fresh_key("fw")).await;
        let resets: Vec<i64> = replies.iter().map(|r| n(r, "reset_after_ms")).collect();
        // In one window the time to its end only shrinks; a new window starts near a period.
        if resets.windows(2).all(|w| w[1] <= w[0] + 1) {
            return replies;
        }
    }
    panic!("five runs crossed a window boundary");
}

async fn fixed_window_admits_the_limit_per_window(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let replies = within_one_window(|key| {
        let gw = &gw;
        async move {
            let mut out = Vec::new();
            for q in [0, 1, 1, 1, 1, 2, 5] {
                out.push(check(gw, "fixed_window", &key, 3, 3600, q).await);
            }
            out
        }
    })
    .await;
    let got: Vec<_> = replies.iter().map(summary).collect();
    assert_eq!(
        got,
        [
            (true, 3, 3, true),
            (true, 3, 2, true),
            (true, 3, 1, true),
            (true, 3, 0, true),
            (false, 3, 0, false),
            (false, 3, 0, false),
            (false, 3, 0, true),
        ]
    );
    for r in &replies {
        let reset = n(r, "reset_after_ms");
        assert!(0 < reset && reset <= 3_600_000, "{r}");
        if r["allowed"] == false && n(r, "retry_after_ms") != -1 {
            // A refusal waits exactly for the window's end.
            assert_eq!(n(r, "retry_after_ms"), reset, "{r}");
            assert_eq!(n(r, "retry_after"), n(r, "reset_after"), "{r}");
        }
    }
}

async fn fixed_window_comes_back_at_the_window_end(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = fresh_key("fw-time");
    let first = check(&gw, "fixed_window", &key, 2, 1, 2).await;
    assert_eq!(summary(&first), (true, 2, 0, true), "{first}");
    let denied = check(&gw, "fixed_window", &key, 2, 1, 1).await;
    if denied["allowed"] == true {
        // The second call fell into the next window already: the whole limit came back.
        assert_eq!(n(&denied, "remaining"), 1, "{denied}");
        return;
    }
    let wait = n(&denied, "retry_after_ms");
    assert!((1..=1_000).contains(&wait), "{denied}");
    gw.pass(Duration::from_millis(wait as u64)).await;
    // A new window: both units are back at once (a sliding log would free them one by one).
    let again = check(&gw, "fixed_window", &key, 2, 1, 2).await;
    assert_eq!(summary(&again), (true, 2, 0, true), "{again}");
}

async fn two_hundred_concurrent_checks_admit_exactly_the_limit(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for algorithm in ["sliding_window", "fixed_window"] {
        let mut tries = 0;
        loop {
            tries += 1;
            let key = fresh_key("conc");
            let calls = (0..200).map(|_| check(&gw, algorithm, &key, 10, 3600, 1));
            let replies = futures::future::join_all(calls).await;
            let allowed = replies.iter().filter(|r| r["allowed"] == true).count();
            let resets: Vec<i64> = replies.iter().map(|r| n(r, "reset_after_ms")).collect();
            let spread = resets.iter().max().unwrap() - resets.iter().min().unwrap();
            if algorithm == "fixed_window" && spread > 1_800_000 && tries < 5 {
                continue; // the hour turned during the burst: two windows
            }
            assert_eq!(allowed, 10, "{algorithm}");
            let mut remaining: Vec<i64> = replies
                .iter()
                .filter(|r| r["allowed"] == true)
                .map(|r| n(r, "remaining"))
                .collect();
            remaining.sort_unstable();
            assert_eq!(remaining, (0..10).collect::<Vec<_>>(), "{algorithm}");
            break;
        }
    }
}

async fn algorithms_keep_separate_limits(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = fresh_key("sep");
    assert_eq!(
        check(&gw, "sliding_window", &key, 1, 3600, 1).await["allowed"],
        true
    );
    assert_eq!(
        check(&gw, "sliding_window", &key, 1, 3600, 1).await["allowed"],
        false
    );
    // Same key, other algorithms: fresh limits.
    assert_eq!(
        check(&gw, "fixed_window", &key, 1, 3600, 1).await["allowed"],
        true
    );
    let gcra = json!({"key": key, "max_burst": 0, "count_per_period": 1, "period": 3600});
    let (status, r) = gw.post("/v1/ratelimit/check", gcra.clone()).await;
    assert_eq!((status.as_u16(), &r["allowed"]), (200, &json!(true)), "{r}");
    let mut explicit = gcra;
    explicit["algorithm"] = json!("gcra");
    let (_, r) = gw.post("/v1/ratelimit/check", explicit).await;
    assert_eq!(r["allowed"], false, "gcra is the default algorithm: {r}");
}

async fn retried_window_checks_spend_once(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for algorithm in ["sliding_window", "fixed_window"] {
        let key = fresh_key("idem");
        let b = body(algorithm, &key, 3, 3600, 1);
        let ikey = fresh_key(algorithm);
        let (s1, replayed1, first) = gw.post_once("/v1/ratelimit/check", &ikey, &b).await;
        assert_eq!((s1, replayed1), (200, false), "{first}");
        let (s2, replayed2, again) = gw.post_once("/v1/ratelimit/check", &ikey, &b).await;
        assert_eq!((s2, replayed2), (200, true), "{again}");
        assert_eq!(again, first, "{algorithm}: the first reply, exactly");
        let other = body(algorithm, &key, 3, 3600, 2);
        let (s3, _, _) = gw.post_once("/v1/ratelimit/check", &ikey, &other).await;
        assert_eq!(s3, 422, "{algorithm}");
        // One unit spent, not two.
        let peek = check(&gw, algorithm, &key, 3, 3600, 0).await;
        assert_eq!(n(&peek, "remaining"), 2, "{algorithm}: {peek}");
    }
}

async fn window_parameters_are_checked(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let key = fresh_key("bad");
    let bad = [
        json!({"algorithm": "leaky_bucket", "key": key, "max_burst": 1, "count_per_period": 1, "period": 1}),
        json!({"algorithm": "sliding_window", "key": key, "max_burst": 1, "count_per_period": 1, "period": 1}),
        json!({"algorithm": "fixed_window", "key": key, "max_burst": 5, "count_per_period": 1, "period": 1}),
        json!({"algorithm": "sliding_window", "key": key, "count_per_period": 10_001, "period": 1}),
        // One sliding check adds at most 1,000 members (docs/performance.md "Redis time per
        // request").
        json!({"algorithm": "sliding_window", "key": key, "count_per_period": 10_000, "period": 1, "quantity": 1_001}),
        json!({"algorithm": "fixed_window", "key": key, "count_per_period": 0, "period": 1}),
        json!({"algorithm": "fixed_window", "key": key, "count_per_period": 1, "period": 0}),
        json!({"algorithm": "gcra", "key": key, "count_per_period": 1, "period": 1}),
        // A window's key lives for its period: at most GATEWAY_RATELIMIT_MAX_TTL_S (a day).
        json!({"algorithm": "sliding_window", "key": key, "count_per_period": 1, "period": 86_401}),
        json!({"algorithm": "fixed_window", "key": key, "count_per_period": 1, "period": 86_401}),
    ];
    for b in bad {
        let (status, r) = gw.post("/v1/ratelimit/check", b.clone()).await;
        assert_eq!(
            (status.as_u16(), r["code"].as_str()),
            (400, Some("invalid_argument")),
            "{b} → {r}"
        );
    }
    let ok = [
        json!({"algorithm": "sliding_window", "key": key, "max_burst": 0, "count_per_period": 10_000, "period": 86_400, "quantity": 0}),
        json!({"algorithm": "sliding_window", "key": fresh_key("max"), "count_per_period": 10_000, "period": 1, "quantity": 1_000}),
        json!({"algorithm": "fixed_window", "key": key, "count_per_period": 1_000_000, "period": 86_400, "quantity": 1_000_000}),
    ];
    for b in ok {
        let (status, r) = gw.post("/v1/ratelimit/check", b.clone()).await;
        assert_eq!(status, 200, "{b} → {r}");
        assert_eq!(r["allowed"], true, "{r}");
    }
}

async fn window_keys_expire(backend: Backend) {
    let settings = common::settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let key = fresh_key("exp");
    check(&gw, "sliding_window", &key, 5, 30, 1).await;
    let fixed = check(&gw, "fixed_window", &key, 5, 30, 1).await;
    let pttl = |name: String| -> Option<i64> {
        let out = match backend {
            Backend::Memory => return None,
            Backend::Redis => common::shared_redis().cli(&["pttl", &name]),
            Backend::Cluster => common::shared_cluster().nodes[0].cli(&["-c", "pttl", &name]),
        };
        Some(out.expect("redis-cli").trim().parse().expect("a pttl"))
    };
    if let Some(sw) = pttl(format!("{prefix}rl:{{{key}}}:sw")) {
        assert!(
            0 < sw && sw <= 30_000,
            "the log expires once its newest unit left: {sw}"
        );
    }
    if let Some(fw) = pttl(format!("{prefix}rl:{{{key}}}:fw")) {
        // The counter expires at its window's end, which the reply also named.
        let reset = n(&fixed, "reset_after_ms");
        assert!(0 < fw && fw <= reset, "{fw} vs {fixed}");
    }
}
