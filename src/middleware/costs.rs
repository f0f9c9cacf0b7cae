//! What each request costs the global limiter (API.md "Global limiter"): the GCRA quantity it
//! spends, known before any store work — from the request line and headers, and for the two
//! routes whose stored bytes follow body fields (`POST /v1/uv/merge`, `POST
//! /v1/ratelimit/check` with `sliding_window`) from their small bodies. One
//! unit for a single-key read or write; more for requests whose store work or stored bytes
//! grow with their input. The same table writes each operation's `x-ratelimit-cost` into the
//! OpenAPI document, so the rule a client reads is the rule the code applies.
//!
//! Writes are priced so that no unit adds more than ~1.4 KiB to the store: at the default
//! budget (50 units/s) one client adds at most ~256 MiB an hour (README "Abuse budget",
//! measured by `tests/abuse_budget.rs`). A read's cost is capped at the caller's burst, so the
//! largest read still fits an idle bucket; a write whose stored bytes keep growing with its
//! input is refused (`413`) when it costs more than the burst, since capping its charge would
//! let it store more than it paid for.

use chrono::NaiveDate;

/// How one operation is charged.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Grows with the body: 1 + body bytes / the divisor. `Capped`: what the request can
    /// store is bounded whatever its size (a page-day's HyperLogLog is at most 12 KiB), so the
    /// charge is capped at the burst; `Uncapped`: stored bytes grow with the body.
    PerBody(u64, Cap),
    /// `POST /v1/uv/merge`: 1 + 12 per day of `from..to` in the body (a day can write one dense
    /// HyperLogLog into `into`: 12 KiB, ~15 KiB with the allocator's rounding and the key).
    MergeDays,
    /// `GET /v1/uv/{page}` over a `from`..`to` range.
    UvRange,
    /// `GET /v1/uv`: pages × days.
    UvUnion,
    /// `GET /v1/checkins/stats`: days.
    CheckinStats,
    /// `GET /v1/geo/{layer}/nearby`: results asked for.
    Nearby,
    /// `POST /v1/ratelimit/check`: 1, but a `sliding_window` check stores one sorted-set
    /// member (~130 B) per admitted unit, so it costs 1 + min(quantity, count_per_period) / 8
    /// from its small body, and more than the burst is refused.
    RateLimitCheck,
    /// Paged listings of large items: `1 + limit / 100` (`limit` defaults to 100).
    PerLimit100,
    /// A fixed charge.
    Fixed(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    Capped,
    Uncapped,
}

/// What the limiter is to do with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// Spend this many units.
    Units(u64),
    /// A write that costs more than the caller's whole burst: refuse it (`413`), it could never
    /// be paid for.
    TooCostly { cost: u64, limit: u64 },
}

/// (method, route template, rule, the rule as the document states it). Every other operation
/// costs 1.
const RULES: &[(&str, &str, Rule, &str)] = &[
    (
        "POST",
        "/v1/dedup/{filter}/items",
        Rule::PerBody(512, Cap::Capped),
        "1 + body bytes / 512",
    ),
    (
        "POST",
        "/v1/dedup/{filter}/check",
        Rule::PerBody(4096, Cap::Capped),
        BODY_RULE,
    ),
    (
        "POST",
        "/v1/dedup/{filter}/filter",
        Rule::PerBody(512, Cap::Capped),
        "1 + body bytes / 512",
    ),
    (
        "POST",
        "/v1/geo/{layer}",
        Rule::PerBody(512, Cap::Uncapped),
        "1 + body bytes / 512 (a body costing more than the caller's burst is refused with 413)",
    ),
    (
        "POST",
        "/v1/uv/{page}",
        Rule::PerBody(384, Cap::Capped),
        "1 + body bytes / 384",
    ),
    (
        "GET",
        "/v1/uv/{page}",
        Rule::UvRange,
        "1, or 1 + days / 31 for a from..to range",
    ),
    ("GET", "/v1/uv", Rule::UvUnion, "1 + pages × days / 366"),
    (
        "POST",
        "/v1/uv/merge",
        Rule::MergeDays,
        "1 + 12 × days from..to (more than the caller's burst is refused with 413: merge fewer days per request)",
    ),
    (
        "GET",
        "/v1/checkins/stats",
        Rule::CheckinStats,
        "1 + days / 8",
    ),
    (
        "GET",
        "/v1/geo/{layer}/nearby",
        Rule::Nearby,
        "1 + count / 100",
    ),
    (
        "POST",
        "/v1/ratelimit/check",
        Rule::RateLimitCheck,
        "1; sliding_window: 1 + min(quantity, count_per_period) / 8 (more than the caller's burst is refused with 413)",
    ),
    // Locks cost the default 1 on every route (acquire, renew, release, inspect): single-key
    // steps storing ~250 B per new name (holder and fencing counter). A waiting acquisition
    // holds no store connection while it waits (it sleeps on a wake-up).
    // A job's payload is up to 64 KiB and is stored as sent: ~1 KiB per unit keeps the
    // abuse budget, and the largest job (65 units) still fits the default burst.
    (
        "POST",
        "/v1/queues/{queue}/jobs",
        Rule::PerBody(1024, Cap::Uncapped),
        "1 + body bytes / 1024 (a body costing more than the caller's burst is refused with 413)",
    ),
    // Up to 100 jobs moved and up to 1 MiB of payloads read in one script.
    ("POST", "/v1/queues/{queue}/claim", Rule::Fixed(2), "2"),
    (
        "GET",
        "/v1/queues/{queue}/dead",
        Rule::PerLimit100,
        "1 + limit / 100",
    ),
];

const BODY_RULE: &str = "1 + body bytes / 4096";

/// Whether [`cost`] needs the request's body for `method route` (small bodies only).
pub fn needs_body(method: &str, route: &str) -> bool {
    matches!(
        rule(method, route),
        Some(Rule::MergeDays | Rule::RateLimitCheck)
    )
}

fn rule(method: &str, route: &str) -> Option<Rule> {
    RULES
        .iter()
        .find(|(m, r, ..)| *m == method && *r == route)
        .map(|&(_, _, rule, _)| rule)
}

/// The charge of a request to `route` against a caller whose burst is `limit`. `body` is
/// given when [`needs_body`] says so.
pub fn cost(
    method: &str,
    route: &str,
    query: Option<&str>,
    content_length: Option<u64>,
    body: Option<&[u8]>,
    limit: u64,
) -> Charge {
    let limit = limit.max(1);
    let Some(rule) = rule(method, route) else {
        return Charge::Units(1);
    };
    let q = |name: &str| -> Option<&str> {
        query?
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    };
    let days = || -> u64 {
        let day = |v: Option<&str>| v.and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        match (day(q("from")), day(q("to"))) {
            (Some(from), Some(to)) if to >= from => (to - from).num_days() as u64 + 1,
            _ => 1,
        }
    };
    let raw = match rule {
        Rule::PerBody(divisor, Cap::Uncapped) => {
            let cost = 1 + content_length.unwrap_or(0) / divisor;
            if cost > limit {
                return Charge::TooCostly { cost, limit };
            }
            cost
        }
        Rule::PerBody(divisor, Cap::Capped) => 1 + content_length.unwrap_or(0) / divisor,
        Rule::MergeDays => {
            #[derive(serde::Deserialize)]
            struct Range {
                from: Option<NaiveDate>,
                to: Option<NaiveDate>,
            }
            // A body the handler will refuse costs 1; the handler says what is wrong with it.
            let days = body
                .and_then(|b| serde_json::from_slice::<Range>(b).ok())
                .and_then(|r| Some((r.to? - r.from?).num_days() + 1))
                .filter(|d| (1..=366).contains(d))
                .unwrap_or(0) as u64;
            let cost = 1 + 12 * days;
            if cost > limit {
                return Charge::TooCostly { cost, limit };
            }
            cost
        }
        Rule::RateLimitCheck => {
            #[derive(serde::Deserialize)]
            struct Check {
                algorithm: Option<String>,
                count_per_period: Option<u64>,
                quantity: Option<u64>,
            }
            // A body the handler will refuse costs 1; the handler says what is wrong with it.
            let stored = body
                .and_then(|b| serde_json::from_slice::<Check>(b).ok())
                .filter(|c| c.algorithm.as_deref() == Some("sliding_window"))
                .map_or(0, |c| {
                    c.quantity.unwrap_or(1).min(c.count_per_period.unwrap_or(0))
                });
            let cost = 1 + stored / 8;
            if cost > limit {
                return Charge::TooCostly { cost, limit };
            }
            cost
        }
        Rule::UvRange if q("from").is_some() || q("to").is_some() => 1 + days() / 31,
        Rule::UvRange => 1,
        Rule::UvUnion => {
            let pages = q("pages").map_or(1, |p| {
                1 + p.matches(',').count() as u64
                    + p.matches("%2C").count() as u64
                    + p.matches("%2c").count() as u64
            });
            1 + pages * days() / 366
        }
        Rule::CheckinStats => 1 + days() / 8,
        Rule::Nearby => 1 + q("count").and_then(|c| c.parse::<u64>().ok()).unwrap_or(20) / 100,
        Rule::PerLimit100 => {
            1 + q("limit")
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(100)
                / 100
        }
        Rule::Fixed(n) => n,
    };
    Charge::Units(raw.clamp(1, limit))
}

/// The rule of `method route` as the OpenAPI document states it.
pub fn rule_text(method: &str, route: &str) -> &'static str {
    RULES
        .iter()
        .find(|(m, r, ..)| m.eq_ignore_ascii_case(method) && *r == route)
        .map_or("1", |(.., text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(method: &str, route: &str, query: Option<&str>, len: Option<u64>, limit: u64) -> u64 {
        match cost(method, route, query, len, None, limit) {
            Charge::Units(n) => n,
            other => panic!("{method} {route}: {other:?}"),
        }
    }

    #[test]
    fn costs_follow_the_input_and_reads_never_pass_the_limit() {
        assert_eq!(units("GET", "/v1/checkins/{user_id}", None, None, 101), 1);
        assert_eq!(units("POST", "/v1/uv/{page}", None, Some(100), 101), 1);
        assert_eq!(units("POST", "/v1/uv/{page}", None, Some(3840), 101), 11);
        assert_eq!(
            units("POST", "/v1/uv/{page}", None, Some(1 << 20), 101),
            101
        );
        assert_eq!(
            units("POST", "/v1/dedup/{filter}/items", None, Some(40_000), 101),
            79
        );
        assert_eq!(
            units("POST", "/v1/dedup/{filter}/check", None, Some(40_000), 101),
            10
        );
        let range = Some("from=2026-01-01&to=2026-12-31");
        assert_eq!(units("GET", "/v1/uv/{page}", range, None, 101), 12);
        assert_eq!(
            units("GET", "/v1/uv/{page}", Some("date=2026-01-01"), None, 101),
            1
        );
        let union = Some("pages=a,b,c,d&from=2026-01-01&to=2026-12-31");
        assert_eq!(units("GET", "/v1/uv", union, None, 101), 4);
        let big = format!(
            "pages={}&from=2026-01-01&to=2026-12-31",
            vec!["p"; 100].join("%2C")
        );
        assert_eq!(units("GET", "/v1/uv", Some(&big), None, 1000), 100);
        assert_eq!(units("GET", "/v1/uv", Some(&big), None, 50), 50, "capped");
        let stats = Some("from=2026-01-01&to=2026-03-31");
        assert_eq!(units("GET", "/v1/checkins/stats", stats, None, 101), 12);
        let nearby = Some("count=1000");
        assert_eq!(
            units("GET", "/v1/geo/{layer}/nearby", nearby, None, 101),
            11
        );
        let check = |body: &str| {
            cost(
                "POST",
                "/v1/ratelimit/check",
                None,
                None,
                Some(body.as_bytes()),
                101,
            )
        };
        assert_eq!(
            check(
                r#"{"key":"k","max_burst":1,"count_per_period":5000,"period":1,"quantity":5000}"#
            ),
            Charge::Units(1)
        );
        assert_eq!(
            check(
                r#"{"algorithm":"fixed_window","key":"k","count_per_period":5000,"period":1,"quantity":5000}"#
            ),
            Charge::Units(1)
        );
        assert_eq!(
            check(
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":5000,"period":1,"quantity":600}"#
            ),
            Charge::Units(76)
        );
        assert_eq!(
            check(
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":100,"period":1,"quantity":5000}"#
            ),
            Charge::Units(13)
        );
        assert_eq!(
            check(
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":5000,"period":1,"quantity":5000}"#
            ),
            Charge::TooCostly {
                cost: 626,
                limit: 101
            }
        );
        let enqueue = "/v1/queues/{queue}/jobs";
        assert_eq!(units("POST", enqueue, None, Some(60), 101), 1);
        assert_eq!(units("POST", enqueue, None, Some(64 * 1024 + 60), 101), 65);
        assert_eq!(
            units("POST", "/v1/queues/{queue}/claim", None, None, 101),
            2
        );
        let dead = "/v1/queues/{queue}/dead";
        assert_eq!(units("GET", dead, Some("limit=1000"), None, 101), 11);
        assert_eq!(units("GET", dead, None, None, 101), 2);
        // Input the handler will refuse still costs at least 1.
        assert_eq!(units("GET", "/v1/uv", Some("pages=&from=x"), None, 101), 1);
    }

    #[test]
    fn writes_whose_bytes_grow_with_the_input_are_refused_above_the_burst() {
        let geo = |len| cost("POST", "/v1/geo/{layer}", None, Some(len), None, 100);
        assert_eq!(geo(50_000), Charge::Units(98));
        assert_eq!(
            geo(60_000),
            Charge::TooCostly {
                cost: 118,
                limit: 100
            }
        );
        let merge = |body: &str| {
            cost(
                "POST",
                "/v1/uv/merge",
                None,
                None,
                Some(body.as_bytes()),
                100,
            )
        };
        assert!(needs_body("POST", "/v1/uv/merge"));
        assert!(!needs_body("POST", "/v1/uv/{page}"));
        let days = |n: i64| {
            let to = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Duration::days(n - 1);
            format!(r#"{{"sources":["a"],"into":"b","from":"2026-01-01","to":"{to}"}}"#)
        };
        assert_eq!(merge(&days(1)), Charge::Units(13));
        assert_eq!(merge(&days(8)), Charge::Units(97));
        assert_eq!(
            merge(&days(9)),
            Charge::TooCostly {
                cost: 109,
                limit: 100
            }
        );
        assert_eq!(merge("not json"), Charge::Units(1));
    }
}
