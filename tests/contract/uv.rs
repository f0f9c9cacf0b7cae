//! Unique-visitor scenarios (docs/api.md "Unique visitors").
//!
//! Cross-page scenarios use pages `a`, `b` and `c`, whose keys hash to slots on three different
//! masters of the test cluster (pinned by a unit test in `src/store/redis/uv.rs`).

use chrono::{Duration, NaiveDate, Utc};
use serde_json::{json, Value};

use crate::common::{
    on_private_redis, script_runs, servers, settings, ttl, Backend, Gateway, RedisProcess,
};

fn today() -> NaiveDate {
    Utc::now().date_naive()
}

fn ymd(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

fn ago(days: i64) -> NaiveDate {
    today() - Duration::days(days)
}

/// Records visitors `{prefix}{i}` for `i` in `range` on `day`, in batches of 1000.
async fn visit(
    gw: &Gateway,
    page: &str,
    day: NaiveDate,
    prefix: &str,
    range: std::ops::Range<u32>,
) {
    let ids: Vec<String> = range.map(|i| format!("{prefix}{i}")).collect();
    for batch in ids.chunks(1000) {
        let (status, body) = gw
            .post(
                &format!("/v1/uv/{page}"),
                json!({ "visitors": batch, "date": ymd(day) }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
}

/// Asserts `estimate` is within 2% of `truth` and returns the relative error, in percent.
fn assert_close(what: &str, estimate: &Value, truth: u64) -> f64 {
    let estimate = estimate
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: not a count: {estimate}"));
    let err = (estimate as f64 - truth as f64).abs() / truth as f64 * 100.0;
    eprintln!("{what}: estimate {estimate} for {truth} distinct ({err:.2}% off)");
    assert!(err <= 2.0, "{what}: {estimate} is {err:.2}% off {truth}");
    err
}

/// Keys matching `pattern` on every server behind `backend`.
fn scan(backend: Backend, pattern: &str) -> Vec<String> {
    servers(backend)
        .iter()
        .flat_map(|r| {
            r.cli(&["--scan", "--pattern", pattern])
                .expect("redis-cli answers")
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|k| !k.is_empty())
        .collect()
}

crate::contract_tests!(
    uv_is_within_two_percent_and_repeats_raise_pv_only,
    range_is_the_union_with_daily_figures,
    never_written_pages_are_zeros,
    cross_page_union,
    merge_folds_days_idempotently,
    bad_inputs_are_problems,
    a_retried_visit_counts_once,
    concurrent_visits_count_once_in_order,
    visitor_ids_are_counted_by_a_keyed_hash,
);

/// A visitor id reaches the HyperLogLog as its keyed hash, never as sent. `hll-XRi76BAA` is an
/// id whose MurmurHash64A (Redis's HyperLogLog hash) sets a register past what the sparse
/// encoding holds: counted as sent, one visit turned a new page-day's HyperLogLog dense
/// (12,304 bytes). Hashed, it stays a few bytes. Every gateway on one store hashes alike: a
/// visitor recorded through two instances counts once.
async fn visitor_ids_are_counted_by_a_keyed_hash(backend: Backend) {
    let mut s = settings(backend);
    // The secret the store keeps (or the embedded store draws), not the suite's fixed one.
    s.uv.visitor_key = None;
    let a = Gateway::with_settings(s.clone()).await;
    let (status, first) = a
        .post("/v1/uv/crafted", json!({"visitor": "hll-XRi76BAA"}))
        .await;
    assert_eq!((status.as_u16(), &first["changed"]), (200, &json!(true)));
    for key in scan(backend, "*uv:{crafted}:*") {
        let len: u64 = servers(backend)[0]
            .cli(&["-c", "strlen", &key])
            .expect("redis-cli answers")
            .trim()
            .parse()
            .unwrap();
        assert!(len < 100, "{key} holds {len} bytes after one visit");
    }
    if backend != Backend::Memory {
        // Another instance on the same store, started after the first kept its secret.
        let b = Gateway::with_settings(s).await;
        let (_, again) = b
            .post("/v1/uv/crafted", json!({"visitor": "hll-XRi76BAA"}))
            .await;
        assert_eq!(again["changed"], json!(false), "{again}");
        let (_, other) = b.post("/v1/uv/crafted", json!({"visitor": "v2"})).await;
        assert_eq!(other["changed"], json!(true), "{other}");
    }
    let (_, day) = a.get("/v1/uv/crafted").await;
    assert_eq!(
        day["uv"],
        json!(if backend == Backend::Memory { 1 } else { 2 })
    );
}

async fn uv_is_within_two_percent_and_repeats_raise_pv_only(backend: Backend) {
    let gw = Gateway::start(backend).await;
    visit(&gw, "home", today(), "v", 0..10_000).await;
    let (status, day) = gw.get("/v1/uv/home").await;
    assert_eq!(status, 200, "{day}");
    assert_eq!(day["page"], "home");
    assert_eq!(day["date"], ymd(today()));
    assert_eq!(day["pv"], 10_000);
    assert_close("10k distinct", &day["uv"], 10_000);
    let uv = day["uv"].clone();

    // The same visitors again: page views grow, distinct visitors do not.
    visit(&gw, "home", today(), "v", 0..1_000).await;
    let (status, again) = gw.post("/v1/uv/home", json!({ "visitor": "v7" })).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again,
        json!({"page": "home", "date": ymd(today()), "changed": false, "pv": 11_001})
    );
    let (_, day) = gw.get(&format!("/v1/uv/home?date={}", ymd(today()))).await;
    assert_eq!(day["uv"], uv);
    assert_eq!(day["pv"], 11_001);

    // A new visitor on a fresh day changes the counter.
    let (_, first) = gw
        .post(
            "/v1/uv/home",
            json!({ "visitor": "someone", "date": ymd(ago(1)) }),
        )
        .await;
    assert_eq!(
        first,
        json!({"page": "home", "date": ymd(ago(1)), "changed": true, "pv": 1})
    );
    let (_, small) = gw.get(&format!("/v1/uv/home?date={}", ymd(ago(1)))).await;
    assert_eq!(
        small,
        json!({"page": "home", "date": ymd(ago(1)), "uv": 1, "pv": 1})
    );
}

async fn range_is_the_union_with_daily_figures(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (d1, d2, d3) = (ago(2), ago(1), today());
    visit(&gw, "shop", d1, "u", 0..3_000).await;
    visit(&gw, "shop", d2, "u", 2_000..5_000).await;
    let (status, range) = gw
        .get(&format!("/v1/uv/shop?from={}&to={}", ymd(d1), ymd(d3)))
        .await;
    assert_eq!(status, 200, "{range}");
    assert_eq!(range["page"], "shop");
    assert_eq!(range["from"], ymd(d1));
    assert_eq!(range["to"], ymd(d3));
    assert_eq!(range["pv"], 6_000);
    assert_close("range union", &range["uv"], 5_000);
    let daily = range["daily"].as_array().expect("daily is a list");
    assert_eq!(daily.len(), 3);
    for (entry, day) in daily.iter().zip([d1, d2, d3]) {
        assert_eq!(entry["date"], ymd(day));
    }
    assert_close("day 1", &daily[0]["uv"], 3_000);
    assert_close("day 2", &daily[1]["uv"], 3_000);
    assert_eq!(daily[0]["pv"], 3_000);
    assert_eq!(daily[1]["pv"], 3_000);
    assert_eq!(daily[2], json!({"date": ymd(d3), "uv": 0, "pv": 0}));

    // A day's figure is the same whether read alone or within a range.
    let (_, one) = gw.get(&format!("/v1/uv/shop?date={}", ymd(d1))).await;
    assert_eq!(one["uv"], daily[0]["uv"]);
    // `to` alone is a one-day range; `from` alone runs to today.
    let (_, to_only) = gw.get(&format!("/v1/uv/shop?to={}", ymd(d2))).await;
    assert_eq!(to_only["from"], ymd(d2));
    assert_eq!(to_only["daily"].as_array().map(Vec::len), Some(1));
    assert_eq!(to_only["uv"], daily[1]["uv"]);
    let (_, from_only) = gw.get(&format!("/v1/uv/shop?from={}", ymd(d1))).await;
    assert_eq!(from_only["to"], ymd(today()));
    assert_eq!(from_only["uv"], range["uv"]);
    // The future reads as zeros.
    let future = ymd(today() + Duration::days(3));
    let (status, ahead) = gw.get(&format!("/v1/uv/shop?date={future}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        ahead,
        json!({"page": "shop", "date": future, "uv": 0, "pv": 0})
    );
}

async fn never_written_pages_are_zeros(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (status, day) = gw.get("/v1/uv/nobody").await;
    assert_eq!(status, 200);
    assert_eq!(
        day,
        json!({"page": "nobody", "date": ymd(today()), "uv": 0, "pv": 0})
    );
    let (from, to) = (ymd(ago(365)), ymd(today()));
    let (status, range) = gw.get(&format!("/v1/uv/nobody?from={from}&to={to}")).await;
    assert_eq!(status, 200, "366 days is allowed");
    assert_eq!(range["uv"], 0);
    assert_eq!(range["pv"], 0);
    assert_eq!(range["daily"].as_array().map(Vec::len), Some(366));
    let (status, union) = gw
        .get(&format!("/v1/uv?pages=nobody,none&from={from}&to={to}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        union,
        json!({"pages": ["nobody", "none"], "from": from, "to": to, "uv": 0})
    );
    let (status, merged) = gw
        .post(
            "/v1/uv/merge",
            json!({"sources": ["nobody"], "into": "none", "from": from, "to": to}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(merged, json!({"into": "none", "days": 0, "uv": 0}));
}

async fn cross_page_union(backend: Backend) {
    let gw = Gateway::start(backend).await;
    visit(&gw, "a", today(), "x", 0..4_000).await;
    visit(&gw, "b", today(), "x", 3_000..7_000).await;
    visit(&gw, "c", ago(1), "x", 6_000..10_000).await;
    let (from, to) = (ymd(ago(1)), ymd(today()));
    let (status, all) = gw
        .get(&format!("/v1/uv?pages=a,b,c&from={from}&to={to}"))
        .await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["pages"], json!(["a", "b", "c"]));
    assert_eq!(
        (all["from"].clone(), all["to"].clone()),
        (json!(from), json!(to))
    );
    assert_close("union of 3 pages over 2 days", &all["uv"], 10_000);

    // Defaults: `to` is today, `from` is `to`; page c's visits were yesterday.
    let (_, ab) = gw.get("/v1/uv?pages=b,a,c").await;
    assert_eq!(ab["pages"], json!(["b", "a", "c"]));
    assert_close("union of 2 pages today", &ab["uv"], 7_000);
    // A single page's union equals its range view; a repeated page counts once.
    let (_, one) = gw
        .get(&format!("/v1/uv?pages=c,c&from={from}&to={to}"))
        .await;
    let (_, range) = gw.get(&format!("/v1/uv/c?from={from}&to={to}")).await;
    assert_eq!(one["uv"], range["uv"]);
    assert_eq!(one["pages"], json!(["c", "c"]));
}

async fn merge_folds_days_idempotently(backend: Backend) {
    let settings = settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let (d0, d1, d2) = (ago(2), ago(1), today());
    visit(&gw, "a", d1, "m", 0..3_000).await;
    visit(&gw, "b", d1, "m", 2_000..6_000).await;
    visit(&gw, "b", d2, "m", 6_000..8_000).await;
    visit(&gw, "c", d2, "m", 7_000..10_000).await;
    let body = json!({"sources": ["a", "b"], "into": "c", "from": ymd(d0), "to": ymd(d2)});
    let (status, merged) = gw.post("/v1/uv/merge", body.clone()).await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["into"], "c");
    assert_eq!(merged["days"], 2, "a and b had visitors on two days");
    assert_close("merged range", &merged["uv"], 10_000);

    let range_path = format!("/v1/uv/c?from={}&to={}", ymd(d0), ymd(d2));
    let (_, after) = gw.get(&range_path).await;
    assert_eq!(after["uv"], merged["uv"]);
    assert_eq!(after["pv"], 3_000, "page views are not merged");
    let daily = after["daily"].as_array().unwrap();
    assert_eq!(daily[0], json!({"date": ymd(d0), "uv": 0, "pv": 0}));
    assert_close("merged day 1", &daily[1]["uv"], 6_000);
    assert_eq!(daily[1]["pv"], 0);
    assert_close("merged day 2", &daily[2]["uv"], 4_000);
    assert_eq!(daily[2]["pv"], 3_000);

    // The union computed across slots agrees with the merged page.
    let (_, union) = gw
        .get(&format!(
            "/v1/uv?pages=a,b,c&from={}&to={}",
            ymd(d0),
            ymd(d2)
        ))
        .await;
    assert_eq!(union["uv"], merged["uv"]);

    // Again: nothing changes.
    let (status, again) = gw.post("/v1/uv/merge", body).await;
    assert_eq!(status, 200);
    assert_eq!(again, merged);
    let (_, still) = gw.get(&range_path).await;
    assert_eq!(still, after);
    // Sources are untouched.
    let (_, a) = gw.get(&format!("/v1/uv/a?date={}", ymd(d1))).await;
    assert_eq!(a["pv"], 3_000);
    assert_close("source a", &a["uv"], 3_000);

    if backend != Backend::Memory {
        // No scratch key outlives its script; keys created by a merge expire like the rest.
        assert_eq!(
            scan(backend, &format!("{prefix}uvt:*")),
            Vec::<String>::new()
        );
        let retention = 400 + 2;
        for key in [
            format!("{prefix}uv:{{c}}:{}", ymd(d1)),
            format!("{prefix}uv:{{a}}:{}", ymd(d1)),
            format!("{prefix}pv:{{a}}:{}", ymd(d1)),
        ] {
            let left = ttl(backend, &key);
            assert!((1..=retention * 86_400).contains(&left), "{key} TTL {left}");
        }
        assert_eq!(
            ttl(backend, &format!("{prefix}pv:{{c}}:{}", ymd(d1))),
            -2,
            "no pv written"
        );
    }
}

async fn bad_inputs_are_problems(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let long = "x".repeat(129);
    for page in ["%7Bx%7D", "a%20b", "a%7B", long.as_str(), "%C3%A9"] {
        let (status, body) = gw.get(&format!("/v1/uv/{page}")).await;
        assert_eq!(status, 400, "GET {page}: {body}");
        assert_eq!(body["code"], "invalid_argument");
        let (status, _) = gw
            .post(&format!("/v1/uv/{page}"), json!({"visitor": "v"}))
            .await;
        assert_eq!(status, 400, "POST {page}");
    }
    let ok_long = "x".repeat(128);
    assert_eq!(gw.get(&format!("/v1/uv/{ok_long}")).await.0, 200);

    // The reserved page name, wherever a page is named.
    let (status, body) = gw.get("/v1/uv/merge").await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (400, Some("invalid_argument"))
    );
    assert_eq!(
        gw.post("/v1/uv/merge", json!({"visitor": "v"})).await.0,
        400
    );
    assert_eq!(gw.get("/v1/uv?pages=a,merge").await.0, 400);
    let (from, to) = (ymd(ago(1)), ymd(today()));
    for body in [
        json!({"sources": ["a"], "into": "merge", "from": from, "to": to}),
        json!({"sources": ["merge"], "into": "c", "from": from, "to": to}),
    ] {
        assert_eq!(gw.post("/v1/uv/merge", body.clone()).await.0, 400, "{body}");
    }

    // Visits: exactly one of visitor/visitors, sizes, dates.
    let max = gw
        .post("/v1/uv/p", json!({"visitors": vec!["v"; 1000]}))
        .await;
    assert_eq!(max.0, 200, "a full batch is fine");
    let too_many: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let (status, body) = gw.post("/v1/uv/p", json!({ "visitors": too_many })).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (413, Some("payload_too_large"))
    );
    let item_max = "v".repeat(512);
    assert_eq!(
        gw.post("/v1/uv/p", json!({ "visitor": item_max })).await.0,
        200
    );
    for body in [
        json!({"visitors": []}),
        json!({}),
        json!({"visitor": "v", "visitors": ["w"]}),
        json!({"visitor": ""}),
        json!({"visitor": "v".repeat(513)}),
        json!({"visitors": ["ok", "v".repeat(513)]}),
        json!({"visitors": ["ok", ""]}),
        json!({"visitor": 5}),
        json!({"visitors": [1, 2]}),
        json!({"visitor": "v", "date": "2026-02-30"}),
        json!({"visitor": "v", "page": "x"}),
        json!(["v"]),
        // Bodies are objects; an array in field order is not one.
        json!(["v", null, null]),
    ] {
        let (status, problem) = gw.post("/v1/uv/p", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    let future = ymd(today() + Duration::days(2));
    let (status, body) = gw
        .post("/v1/uv/p", json!({"visitor": "v", "date": future}))
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (422, Some("unprocessable"))
    );
    let too_old = ymd(ago(400));
    assert_eq!(
        gw.post("/v1/uv/p", json!({"visitor": "v", "date": too_old}))
            .await
            .0,
        422
    );
    let oldest = ymd(ago(399));
    assert_eq!(
        gw.post("/v1/uv/p", json!({"visitor": "v", "date": oldest}))
            .await
            .0,
        200,
        "the oldest retained day is writable"
    );
    let (status, body) = gw
        .send(
            gw.client
                .post(gw.url("/v1/uv/p"))
                .header("content-type", "text/plain")
                .body("v"),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );

    // Ranges: at most 366 days, never backwards, date XOR from/to.
    let (start, end) = (ago(366), today());
    let too_long = format!("from={}&to={}", ymd(start), ymd(end));
    let backwards = format!("from={}&to={}", ymd(end), ymd(ago(1)));
    for query in [
        too_long.as_str(),
        backwards.as_str(),
        "date=2026-01-01&from=2026-01-01",
        "date=2026-13-01",
        "from=yesterday",
        "bogus=1",
    ] {
        let (status, body) = gw.get(&format!("/v1/uv/p?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
    }
    for query in [too_long.as_str(), backwards.as_str()] {
        let (status, _) = gw.get(&format!("/v1/uv?pages=a,b&{query}")).await;
        assert_eq!(status, 400, "union {query}");
    }
    for (from, to) in [(start, end), (end, ago(1))] {
        let body = json!({"sources": ["a"], "into": "c", "from": ymd(from), "to": ymd(to)});
        assert_eq!(
            gw.post("/v1/uv/merge", body).await.0,
            400,
            "merge {from}..{to}"
        );
    }

    // Unions: 1 to 100 valid pages.
    let hundred: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
    assert_eq!(
        gw.get(&format!("/v1/uv?pages={}", hundred.join(",")))
            .await
            .0,
        200
    );
    let (status, _) = gw
        .get(&format!("/v1/uv?pages={},p100", hundred.join(",")))
        .await;
    assert_eq!(status, 400, "101 pages");
    for query in [
        "",
        "pages=",
        "pages=a,,b",
        "pages=a%20b",
        "pages=a&pages=b",
        "pages=a,%7Bb%7D",
    ] {
        let (status, body) = gw.get(&format!("/v1/uv?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
    }

    // Merges: sources 1 to 20, every field present.
    let twenty: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let body = json!({"sources": twenty, "into": "c", "from": from, "to": to});
    assert_eq!(gw.post("/v1/uv/merge", body).await.0, 200);
    let many: Vec<String> = (0..21).map(|i| format!("p{i}")).collect();
    for body in [
        json!({"sources": [], "into": "c", "from": from, "to": to}),
        json!({"sources": many, "into": "c", "from": from, "to": to}),
        json!({"sources": ["a"], "into": "c", "from": from}),
        json!({"sources": ["a"], "from": from, "to": to}),
        json!({"sources": ["a b"], "into": "c", "from": from, "to": to}),
        json!({"sources": "a", "into": "c", "from": from, "to": to}),
        json!({"sources": ["a"], "into": "c", "from": from, "to": to, "extra": 1}),
        json!([["a"], "c", from, to]),
    ] {
        let (status, problem) = gw.post("/v1/uv/merge", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
    }
    let (status, body) = gw.delete("/v1/uv/p").await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
}

/// A day's keys expire with the day (`GATEWAY_UV_RETENTION_DAYS`). The script sets the expiry
/// only when the HyperLogLog changes or a key is new, so a key lost on its own (evicted, say)
/// and written again must come back with it, whichever of the two it was.
async fn day_keys_always_carry_their_expiry(backend: Backend) {
    let settings = settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let (uv, pv) = (
        format!("{prefix}uv:{{ttl}}:{}", ymd(today())),
        format!("{prefix}pv:{{ttl}}:{}", ymd(today())),
    );
    let del = |key: &str| {
        servers(backend)[0]
            .cli(&["-c", "del", key])
            .expect("redis-cli answers");
    };
    let expires = |when: &str| {
        for key in [&uv, &pv] {
            let left = ttl(backend, key);
            assert!(
                (1..=(400 + 2) * 86_400).contains(&left),
                "{when}: {key} TTL {left}"
            );
        }
    };
    let record = |visitor: &'static str, changed: bool, views: u64| {
        let gw = &gw;
        async move {
            let (status, body) = gw.post("/v1/uv/ttl", json!({ "visitor": visitor })).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(
                (body["changed"].as_bool(), body["pv"].as_u64()),
                (Some(changed), Some(views))
            );
        }
    };
    record("x", true, 1).await;
    expires("first visit");
    record("x", false, 2).await;
    expires("a repeat, nothing changed");

    del(&uv);
    record("x", true, 3).await;
    expires("the HyperLogLog written again");

    del(&pv);
    record("x", false, 1).await;
    expires("the page views written again, the HyperLogLog unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn day_keys_always_carry_their_expiry_redis() {
    day_keys_always_carry_their_expiry(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn day_keys_always_carry_their_expiry_cluster() {
    day_keys_always_carry_their_expiry(Backend::Cluster).await;
}

/// Sends 40 visits to `page` at once: even ones of visitors recorded before, odd ones of new
/// visitors, 1 to 5 visitors each; then 20 more of visitors recorded before only. Each must
/// count exactly once, as if the requests came one after the other: sorted by their replies'
/// `pv`, each is the one before plus its own visitors, and a visit of visitors already seen
/// reports `changed: false`. (The Redis
/// backend records concurrent visits to a page in groups, one script run per group,
/// `src/store/group.rs`: a reply given another request's place in its group fails this.)
async fn visit_at_once(gw: &Gateway, page: &str) {
    let path = format!("/v1/uv/{page}");
    let seen: Vec<String> = (0..5).map(|i| format!("seen-{i}")).collect();
    let (status, first) = gw.post(&path, json!({ "visitors": seen })).await;
    assert_eq!(
        (status.as_u16(), first["pv"].as_u64()),
        (200, Some(5)),
        "{first}"
    );
    let bodies: Vec<(usize, bool, Value)> = (0..40)
        .map(|i| {
            let size = i % 5 + 1;
            let repeat = i % 2 == 0;
            let visitors: Vec<String> = if repeat {
                seen[..size].to_vec()
            } else {
                (0..size).map(|j| format!("new-{i}-{j}")).collect()
            };
            (size, repeat, json!({ "visitors": visitors }))
        })
        .collect();
    let replies = futures::future::join_all(
        bodies
            .iter()
            .map(|(_, _, body)| gw.post(&path, body.clone())),
    )
    .await;
    let mut done: Vec<(u64, usize, bool, bool)> = replies
        .iter()
        .zip(&bodies)
        .map(|((status, reply), (size, repeat, _))| {
            assert_eq!(*status, 200, "{reply}");
            let changed = reply["changed"].as_bool().expect("changed");
            (reply["pv"].as_u64().expect("pv"), *size, *repeat, changed)
        })
        .collect();
    done.sort_unstable();
    let mut pv = 5;
    for &(views, size, repeat, changed) in &done {
        assert_eq!(views, pv + size as u64, "in pv order: {done:?}");
        pv = views;
        if repeat {
            assert!(
                !changed,
                "visitors seen before changed the HyperLogLog: {done:?}"
            );
        }
    }
    assert!(
        done.iter()
            .any(|&(_, _, repeat, changed)| !repeat && changed),
        "no new visitor changed the HyperLogLog: {done:?}"
    );
    // Then 20 visits at once of visitors all seen before: groups that change nothing still
    // count each visit once, in order.
    let sizes: Vec<usize> = (0..20).map(|i| i % 5 + 1).collect();
    let replies = futures::future::join_all(
        sizes
            .iter()
            .map(|&size| gw.post(&path, json!({ "visitors": seen[..size] }))),
    )
    .await;
    let mut again: Vec<(u64, usize, bool)> = replies
        .iter()
        .zip(&sizes)
        .map(|((status, reply), &size)| {
            assert_eq!(*status, 200, "{reply}");
            let changed = reply["changed"].as_bool().expect("changed");
            (reply["pv"].as_u64().expect("pv"), size, changed)
        })
        .collect();
    again.sort_unstable();
    for &(views, size, changed) in &again {
        assert_eq!(views, pv + size as u64, "in pv order: {again:?}");
        assert!(
            !changed,
            "visitors seen before changed the HyperLogLog: {again:?}"
        );
        pv = views;
    }
    let (_, day) = gw.get(&path).await;
    assert_eq!(day["pv"].as_u64(), Some(pv), "{day}");
    assert_eq!(day["uv"].as_u64(), Some(5 + 20 * 3), "{day}");
}

async fn concurrent_visits_count_once_in_order(backend: Backend) {
    let gw = Gateway::start(backend).await;
    visit_at_once(&gw, "together").await;
}

/// The grouping `visit_at_once` checks does happen: 60 concurrent visits to one page take
/// fewer script runs than visits (a private Redis, so its command counts are this test's). On
/// one thread, as the binary's workers run (`src/workers.rs`): a multi-thread runtime runs a
/// freshly spawned task first, before the requests already woken could join its group.
#[tokio::test]
async fn concurrent_visits_to_a_page_share_script_runs() {
    let (redis, gw, _) = on_private_redis().await;
    let before = script_runs(&redis);
    visit_at_once(&gw, "grouped").await;
    // 61 visits and two reads (no script): at most 61 runs without grouping.
    let runs = script_runs(&redis) - before;
    assert!(runs < 61, "{runs} script runs for 61 visits");
}

/// Redis going away is a quick 503 on every UV route, and the gateway serves again once it is
/// back (Redis only: the memory backend cannot go away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_is_503_then_recovers() {
    let mut redis = RedisProcess::start(&[], false);
    let mut s = settings(Backend::Memory);
    s.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let gw = Gateway::with_settings(s).await;
    let visit = json!({"visitors": ["v1", "v2"]});
    assert_eq!(gw.post("/v1/uv/a", visit.clone()).await.0, 200);

    redis.stop();
    let merge = json!({"sources": ["a"], "into": "b", "from": ymd(today()), "to": ymd(today())});
    for (status, body) in [
        gw.post("/v1/uv/a", visit.clone()).await,
        gw.get("/v1/uv/a").await,
        gw.get("/v1/uv?pages=a,b").await,
        gw.post("/v1/uv/merge", merge).await,
    ] {
        assert_eq!(
            (status.as_u16(), body["code"].as_str()),
            (503, Some("backend_unavailable")),
            "{body}"
        );
    }

    redis.restart();
    let back = "the gateway serves again once Redis is back";
    crate::common::poll::eventually(std::time::Duration::from_secs(10), back, || async {
        (gw.get("/v1/uv/a").await.0 == 200).then_some(())
    })
    .await;
    assert_eq!(gw.post("/v1/uv/a", visit).await.0, 200);
}

/// The memory backend's HyperLogLog uses Redis's hash, registers and estimator, so the same
/// visits under the same visitor key give the same figures — not just figures within the
/// error bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_answers_what_redis_answers() {
    // Both under the suite's one visitor key (`settings`).
    let memory = Gateway::start(Backend::Memory).await;
    let redis = Gateway::start(Backend::Redis).await;
    let (from, to) = (ymd(ago(2)), ymd(today()));
    let mut replies = Vec::new();
    for gw in [&memory, &redis] {
        visit(gw, "a", ago(2), "r", 0..2_500).await;
        visit(gw, "a", ago(1), "r", 2_000..9_000).await;
        visit(gw, "b", ago(1), "r", 8_000..20_000).await;
        visit(gw, "c", today(), "s", 0..300).await;
        let merge = json!({"sources": ["a", "b"], "into": "c", "from": from, "to": to});
        replies.push(vec![
            gw.get(&format!("/v1/uv/a?from={from}&to={to}")).await.1,
            gw.get(&format!("/v1/uv/b?date={}", ymd(ago(1)))).await.1,
            gw.get(&format!("/v1/uv?pages=a,b,c&from={from}&to={to}"))
                .await
                .1,
            gw.post("/v1/uv/merge", merge).await.1,
            gw.get(&format!("/v1/uv/c?from={from}&to={to}")).await.1,
        ]);
    }
    assert_eq!(replies[0], replies[1]);
    assert_close("a over 2 days", &replies[0][0]["uv"], 9_000);
    assert_close("union", &replies[0][2]["uv"], 20_300);
}

/// docs/api.md "Conventions": a visit retried under the same key answers the first reply and
/// counts nothing more; the same key for other visitors is 422.
async fn a_retried_visit_counts_once(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let page = format!("idem{}", crate::common::unique_prefix().replace(':', ""));
    let path = format!("/v1/uv/{page}");
    let send = |body: Value, key: &'static str| {
        let (gw, path) = (&gw, &path);
        async move { gw.post_once(path, key, &body).await }
    };
    let body = json!({"visitors": ["a", "b", "c"]});
    let (status, replayed, first) = send(body.clone(), "visit-1").await;
    assert_eq!(
        (status, replayed, first["pv"].as_u64()),
        (200, false, Some(3))
    );
    for _ in 0..3 {
        let (status, replayed, again) = send(body.clone(), "visit-1").await;
        assert_eq!((status, replayed), (200, true));
        assert_eq!(again, first);
    }
    let (_, day) = gw.get(&format!("/v1/uv/{page}")).await;
    assert_eq!(day["pv"], 3, "counted once: {day}");
    let (status, _, problem) = send(json!({"visitors": ["a", "b"]}), "visit-1").await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("unprocessable"))
    );
    // Repeats sent at once, as a client timing out and retrying might: the reply is recorded
    // with the visit in one store step, so exactly one is applied and every other replays it.
    let replies =
        futures::future::join_all((0..12).map(|_| send(json!({"visitors": ["d"]}), "visit-2")))
            .await;
    crate::applied_once(&replies, 200);
    let (_, day) = gw.get(&format!("/v1/uv/{page}")).await;
    assert_eq!(day["pv"], 4, "counted once: {day}");
}
