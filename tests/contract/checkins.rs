//! Check-in scenarios (docs/api.md "Check-ins").

use chrono::{Datelike, Duration, NaiveDate, Utc};
use futures::StreamExt;
use serde_json::json;

use crate::common::{on_private_redis, script_runs, settings, ttl, Backend, Gateway};

fn today() -> NaiveDate {
    Utc::now().date_naive()
}

fn ymd(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

fn ym(d: NaiveDate) -> String {
    d.format("%Y-%m").to_string()
}

async fn check_in(gw: &Gateway, user: u64, day: NaiveDate) -> serde_json::Value {
    let (status, body) = gw
        .post(&format!("/v1/checkins/{user}"), json!({ "date": ymd(day) }))
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

crate::contract_tests!(
    checkin_is_idempotent,
    bare_post_checks_in_today,
    streak_crosses_month_boundary,
    streak_spans_leap_februaries,
    stats_counts_every_and_any_day,
    bad_inputs_are_problems,
    chunks_past_the_sparse_limit_count_the_same,
    concurrent_checkins_answer_in_order,
);

async fn checkin_is_idempotent(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let today = today();
    let first = check_in(&gw, 42, today).await;
    assert_eq!(
        first,
        json!({"user_id": 42, "date": ymd(today), "already_checked_in": false, "month_count": 1, "current_streak": 1})
    );
    let again = check_in(&gw, 42, today).await;
    assert_eq!(again["already_checked_in"], true);
    assert_eq!(again["month_count"], 1);
    assert_eq!(again["current_streak"], 1);

    let (status, day) = gw.get(&format!("/v1/checkins/42/{}", ymd(today))).await;
    assert_eq!(status, 200);
    assert_eq!(
        day,
        json!({"user_id": 42, "date": ymd(today), "checked_in": true})
    );
    let yesterday = today - Duration::days(1);
    let (_, day) = gw.get(&format!("/v1/checkins/42/{}", ymd(yesterday))).await;
    assert_eq!(day["checked_in"], false);
    let (_, other) = gw.get(&format!("/v1/checkins/43/{}", ymd(today))).await;
    assert_eq!(other["checked_in"], false);
}

async fn bare_post_checks_in_today(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let resp = gw
        .client
        .post(gw.url("/v1/checkins/4294967295"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["date"], ymd(today()));
    assert_eq!(body["user_id"], 4_294_967_295u64);
    let (status, body) = gw.post("/v1/checkins/0", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body["already_checked_in"], false);
    let (_, month) = gw.get("/v1/checkins/4294967295").await;
    assert_eq!(month["month"], ym(today()));
    assert_eq!(month["days"], json!([today().day()]));
}

/// A streak as long as a 1,500-day retention always crosses a 29-day February: the check-in
/// reply's streak (worked out by the store; on Redis inside `checkin_set.lua`, which derives each
/// month's length itself) and the month view's (worked out by the gateway) count every day.
async fn streak_spans_leap_februaries(backend: Backend) {
    const DAYS: i64 = 1500;
    let mut settings = crate::common::settings(backend);
    settings.checkins.retention_days = DAYS as u32;
    let gw = Gateway::with_settings(settings).await;
    let today = today();
    let leap_day = (0..DAYS)
        .map(|i| today - Duration::days(i))
        .find(|d| d.month() == 2 && d.day() == 29);
    assert!(leap_day.is_some(), "the window holds a February 29th");
    futures::stream::iter(1..DAYS)
        .for_each_concurrent(16, |i| {
            let gw = &gw;
            async move {
                check_in(gw, 11, today - Duration::days(i)).await;
            }
        })
        .await;
    let body = check_in(&gw, 11, today).await;
    assert_eq!(body["current_streak"], DAYS, "{body}");
    let (_, month) = gw.get("/v1/checkins/11").await;
    assert_eq!(month["current_streak"], DAYS, "{month}");

    // A gap on the leap day itself ends the streak there.
    let leap_day = leap_day.expect("checked above");
    for i in 1..DAYS {
        let day = today - Duration::days(i);
        if day > leap_day {
            check_in(&gw, 12, day).await;
        }
    }
    let body = check_in(&gw, 12, today).await;
    assert_eq!(
        body["current_streak"],
        (today - leap_day).num_days(),
        "{body}"
    );
}

async fn streak_crosses_month_boundary(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let today = today();
    // 40 consecutive days ending today always span at least one month boundary.
    for i in (0..40).rev() {
        check_in(&gw, 7, today - Duration::days(i)).await;
    }
    let (status, this_month) = gw.get(&format!("/v1/checkins/7?month={}", ym(today))).await;
    assert_eq!(status, 200);
    let expected_days: Vec<u32> = (1..=today.day()).collect();
    assert_eq!(this_month["days"], json!(expected_days));
    assert_eq!(this_month["count"], today.day());
    assert_eq!(this_month["first_day"], 1);
    assert_eq!(this_month["longest_streak"], today.day());
    assert_eq!(this_month["current_streak"], 40);

    let last_of_prev = today.with_day(1).unwrap() - Duration::days(1);
    let start = today - Duration::days(39);
    let prev_days: Vec<u32> = (1..=last_of_prev.day())
        .filter(|d| last_of_prev.with_day(*d).unwrap() >= start)
        .collect();
    let (_, prev) = gw
        .get(&format!("/v1/checkins/7?month={}", ym(last_of_prev)))
        .await;
    assert_eq!(prev["days"], json!(prev_days));
    assert_eq!(prev["count"], prev_days.len());
    assert_eq!(prev["first_day"], prev_days[0]);
    assert_eq!(prev["longest_streak"], prev_days.len());
    assert_eq!(
        prev["current_streak"], 40,
        "the same whichever month is viewed"
    );

    // Today not checked in yet: the streak ends yesterday. A gap stops it.
    for i in [10, 5, 4, 3, 2, 1] {
        check_in(&gw, 8, today - Duration::days(i)).await;
    }
    let (_, m) = gw.get("/v1/checkins/8").await;
    assert_eq!(m["current_streak"], 5);
    let body = check_in(&gw, 8, today).await;
    assert_eq!(body["current_streak"], 6);
    // A back-filled day joins the runs on both sides.
    for i in 6..=9 {
        check_in(&gw, 8, today - Duration::days(i)).await;
    }
    let (_, m) = gw.get("/v1/checkins/8").await;
    assert_eq!(m["current_streak"], 11);
    let (_, empty) = gw.get("/v1/checkins/9?month=2020-02").await;
    assert_eq!(
        empty,
        json!({"user_id": 9, "month": "2020-02", "days": [], "count": 0, "first_day": null, "longest_streak": 0, "current_streak": 0})
    );
}

async fn stats_counts_every_and_any_day(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let d1 = today() - Duration::days(3);
    let (d2, d3) = (d1 + Duration::days(1), d1 + Duration::days(2));
    // 5_000_000 and 4294967295 live in other cohort chunks than 1, 2, 3.
    let plan: [(u64, &[NaiveDate]); 5] = [
        (1, &[d1, d2, d3]),
        (2, &[d1, d3]),
        (3, &[d2]),
        (5_000_000, &[d1, d2, d3]),
        (4_294_967_295, &[d3]),
    ];
    for (user, days) in plan {
        for d in days {
            check_in(&gw, user, *d).await;
        }
    }
    let (status, stats) = gw
        .get(&format!(
            "/v1/checkins/stats?from={}&to={}",
            ymd(d1),
            ymd(d3)
        ))
        .await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(
        stats,
        json!({
            "from": ymd(d1), "to": ymd(d3),
            "daily": [{"date": ymd(d1), "count": 3}, {"date": ymd(d2), "count": 3}, {"date": ymd(d3), "count": 4}],
            "every_day": 2, "any_day": 5
        })
    );
    // A range with a day nobody checked in on: AND is empty, OR unchanged.
    let before = d1 - Duration::days(1);
    let (_, wider) = gw
        .get(&format!(
            "/v1/checkins/stats?from={}&to={}",
            ymd(before),
            ymd(d3)
        ))
        .await;
    assert_eq!(wider["daily"][0]["count"], 0);
    assert_eq!(wider["every_day"], 0);
    assert_eq!(wider["any_day"], 5);
    let (_, single) = gw
        .get(&format!(
            "/v1/checkins/stats?from={}&to={}",
            ymd(d2),
            ymd(d2)
        ))
        .await;
    assert_eq!(single["every_day"], 3);
    assert_eq!(single["any_day"], 3);
}

async fn bad_inputs_are_problems(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let today = today();
    for user in ["-1", "4294967296", "abc", "1.5", "%20", "01x"] {
        let (status, body) = gw.post(&format!("/v1/checkins/{user}"), json!({})).await;
        assert_eq!(status, 400, "user {user}: {body}");
        assert_eq!(body["code"], "invalid_argument");
    }
    let future = ymd(today + Duration::days(2));
    let (status, body) = gw.post("/v1/checkins/1", json!({ "date": future })).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (422, Some("unprocessable"))
    );
    let too_old = ymd(today - Duration::days(400));
    let (status, _) = gw.post("/v1/checkins/1", json!({ "date": too_old })).await;
    assert_eq!(status, 422);
    let oldest = ymd(today - Duration::days(399));
    let (status, _) = gw.post("/v1/checkins/1", json!({ "date": oldest })).await;
    assert_eq!(status, 200, "the oldest retained day is writable");
    for body in [
        json!({"date": "2026-02-30"}),
        json!({"date": 5}),
        json!([1]),
        // The body is an object: serde would otherwise read an array positionally.
        json!([ymd(today)]),
        json!({"day": "2026-01-01"}),
        json!("x"),
    ] {
        let (status, problem) = gw.post("/v1/checkins/1", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
    }
    let resp = gw
        .client
        .post(gw.url("/v1/checkins/1"))
        .header("content-type", "application/json")
        .body("{\"date\":")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let (status, body) = gw
        .send(
            gw.client
                .post(gw.url("/v1/checkins/1"))
                .header("content-type", "text/plain")
                .body("hello"),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    // Just over the 1 MiB default: small enough that loopback buffers take it all before the
    // gateway answers, so the client never sees a reset instead of the 413.
    let huge = format!("{{\"date\":\"{}\"}}", " ".repeat(1024 * 1024 + 1024));
    let (status, body) = gw
        .send(
            gw.client
                .post(gw.url("/v1/checkins/1"))
                .header("content-type", "application/json")
                .body(huge),
        )
        .await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (413, Some("payload_too_large"))
    );

    for query in ["month=2026-13", "month=abc", "month=2026-1", "bogus=1"] {
        let (status, _) = gw.get(&format!("/v1/checkins/1?{query}")).await;
        assert_eq!(status, 400, "{query}");
    }
    let (status, _) = gw.get("/v1/checkins/1/2026-13-01").await;
    assert_eq!(status, 400);
    let (status, _) = gw.get("/v1/checkins/x/2026-01-01").await;
    assert_eq!(status, 400);

    let from = today - Duration::days(91);
    let ok = format!("/v1/checkins/stats?from={}&to={}", ymd(from), ymd(today));
    assert_eq!(gw.get(&ok).await.0, 200, "92 days is allowed");
    let too_long = format!(
        "/v1/checkins/stats?from={}&to={}",
        ymd(from - Duration::days(1)),
        ymd(today)
    );
    assert_eq!(gw.get(&too_long).await.0, 400, "93 days is not");
    let backwards = format!("/v1/checkins/stats?from={}&to={}", ymd(today), ymd(from));
    assert_eq!(gw.get(&backwards).await.0, 400);
    assert_eq!(gw.get("/v1/checkins/stats?from=2026-01-01").await.0, 400);
    assert_eq!(gw.get("/v1/checkins/stats").await.0, 400);

    let (status, body) = gw.delete("/v1/checkins/1").await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    let (status, body) = gw.get("/v1/nothing-here").await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (404, Some("not_found"))
    );
}

/// A cohort chunk starts as a set of offsets and becomes a bitmap past 512 users (Redis
/// backend); stats count the same either way, across the switch and beside sparse chunks.
async fn chunks_past_the_sparse_limit_count_the_same(backend: Backend) {
    let settings = settings(backend);
    let prefix = settings.key_prefix.clone();
    let gw = Gateway::with_settings(settings).await;
    let day = "2026-01-01";
    let check = |user: u64, date: &'static str| {
        let gw = &gw;
        async move {
            let (status, body) = gw
                .post(&format!("/v1/checkins/{user}"), json!({"date": date}))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    // Chunk 3: 600 users on day 1 (a bitmap), 100 of them on day 2 (still sparse).
    let chunk3: Vec<u64> = (0..600)
        .map(|i| (3 << 20) | (1_048_575 - i * 1_000))
        .collect();
    futures::stream::iter(chunk3.iter().copied())
        .for_each_concurrent(16, |u| check(u, day))
        .await;
    for u in &chunk3[..100] {
        check(*u, "2026-01-02").await;
    }
    // Chunk 4095: one user each day.
    check(4_294_967_295, day).await;
    check(4_294_967_295, "2026-01-02").await;
    let (status, stats) = gw
        .get("/v1/checkins/stats?from=2026-01-01&to=2026-01-02")
        .await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["daily"][0]["count"], 601);
    assert_eq!(stats["daily"][1]["count"], 101);
    assert_eq!(stats["every_day"], 101);
    assert_eq!(stats["any_day"], 601);
    // Both forms expire with their day, the bitmap made from a set too (Redis backends).
    if backend != Backend::Memory {
        for key in [
            "ckd:{3}:2026-01-01",
            "ckd:{3}:2026-01-02",
            "ckd:{4095}:2026-01-01",
        ] {
            let left = ttl(backend, &format!("{prefix}{key}"));
            assert!(left > 0, "{key} has TTL {left}");
        }
    }
}

/// 40 check-ins at once: 10 of one user for today, 30 of other users, one of which also for a
/// second day. Each answers as if they came one after the other: exactly one of the same
/// user's is the first, every count and streak is right. (A single Redis records concurrent
/// check-ins in groups, one script run per group, `src/store/group.rs`: a reply given another
/// check-in's place in its group fails this.)
async fn check_in_at_once(gw: &Gateway) {
    let today = today();
    let yesterday = today - Duration::days(1);
    check_in(gw, 500, yesterday).await;
    let mut asks: Vec<(u64, NaiveDate)> = (0..10).map(|_| (500, today)).collect();
    asks.extend((600..630).map(|u| (u, today)));
    asks.push((600, yesterday));
    let replies =
        futures::future::join_all(asks.iter().map(|&(user, day)| check_in(gw, user, day))).await;
    let mut firsts = 0;
    for ((user, day), reply) in asks.iter().zip(&replies) {
        assert_eq!(reply["user_id"], *user, "{reply}");
        assert_eq!(reply["date"], ymd(*day), "{reply}");
        if *user == 500 {
            firsts += usize::from(reply["already_checked_in"] == false);
            let month_count = if yesterday.month() == today.month() {
                2
            } else {
                1
            };
            assert_eq!(reply["month_count"], month_count, "{reply}");
            assert_eq!(reply["current_streak"], 2, "{reply}");
        } else if *user != 600 {
            assert_eq!(
                (
                    &reply["already_checked_in"],
                    &reply["month_count"],
                    &reply["current_streak"]
                ),
                (&json!(false), &json!(1), &json!(1)),
                "{reply}"
            );
        }
    }
    assert_eq!(
        firsts, 1,
        "one of user 500's check-ins is the first: {replies:?}"
    );
    // User 600's two days: whichever came second saw the other's.
    let (_, month) = gw
        .get(&format!("/v1/checkins/600?month={}", ym(today)))
        .await;
    assert_eq!(month["current_streak"], 2, "{month}");
    let (status, stats) = gw
        .get(&format!(
            "/v1/checkins/stats?from={}&to={}",
            ymd(today),
            ymd(today)
        ))
        .await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["daily"][0]["count"], 31, "{stats}");
}

async fn concurrent_checkins_answer_in_order(backend: Backend) {
    let gw = Gateway::start(backend).await;
    check_in_at_once(&gw).await;
}

/// The grouping `check_in_at_once` checks does happen: 41 concurrent check-ins take fewer
/// script runs than check-ins. On one thread, as the binary's workers run (`src/workers.rs`).
#[tokio::test]
async fn concurrent_checkins_share_script_runs() {
    let (redis, gw, _) = on_private_redis().await;
    let before = script_runs(&redis);
    check_in_at_once(&gw).await;
    // 42 check-ins, a month view and stats (which run a script per chunk and day).
    let runs = script_runs(&redis) - before;
    assert!(runs < 30, "{runs} script runs for 42 check-ins");
}

/// A check-in that fails inside a group fails alone: one user's month key of the wrong type
/// (written behind the gateway's back) is that user's 500, while the check-ins grouped with it
/// succeed.
#[tokio::test]
async fn a_failing_checkin_does_not_fail_its_group() {
    let (redis, gw, prefix) = on_private_redis().await;
    let key = format!("{prefix}ck:{{77}}:{}", ym(today()));
    redis
        .cli(&["rpush", &key, "not a bitmap"])
        .expect("redis-cli answers");
    let users = [76u64, 77, 78, 79];
    let paths: Vec<String> = users.iter().map(|u| format!("/v1/checkins/{u}")).collect();
    let replies =
        futures::future::join_all(paths.iter().map(|path| gw.post(path, json!({})))).await;
    for (user, (status, body)) in users.iter().zip(&replies) {
        if *user == 77 {
            assert_eq!(status.as_u16(), 500, "{body}");
        } else {
            assert_eq!(status.as_u16(), 200, "{body}");
            assert_eq!(body["current_streak"], 1, "{body}");
        }
    }
}

/// A chunk that turns from a set into a bitmap partway through a group keeps its expiry: the
/// conversion re-creates the key, and the group's later check-ins must not take the expiry
/// set before it for granted. On one thread, so the last check-ins form one group.
#[tokio::test]
async fn a_chunk_turned_bitmap_in_a_group_keeps_its_expiry() {
    let (redis, gw, prefix) = on_private_redis().await;
    let day = ymd(today());
    for user in 0..510 {
        check_in(&gw, user, today()).await;
    }
    let paths: Vec<String> = (510..516).map(|u| format!("/v1/checkins/{u}")).collect();
    let replies =
        futures::future::join_all(paths.iter().map(|path| gw.post(path, json!({})))).await;
    assert!(replies.iter().all(|(s, _)| *s == 200), "{replies:?}");
    let key = format!("{prefix}ckd:{{0}}:{day}");
    let kind = redis.cli(&["type", &key]).expect("redis-cli answers");
    assert_eq!(
        kind.trim(),
        "string",
        "past 512 users the chunk is a bitmap"
    );
    let left = redis.cli(&["ttl", &key]).expect("redis-cli answers");
    assert!(
        left.trim().parse::<i64>().expect("a TTL") > 0,
        "the bitmap's TTL: {left}"
    );
}
