//! What each request costs the global limiter (API.md "Global limiter"): the GCRA quantity it
//! spends, known before any store work — from the request line and headers, and for the
//! routes whose cost follows body fields (`POST /v1/uv/merge`, `POST /v1/ratelimit/check` with
//! `sliding_window`, a queue claim's and a lock acquisition's `wait_ms`) from their small
//! bodies. One
//! unit for a single-key read or write; more for requests whose store work or stored bytes
//! grow with their input. The same table writes each operation's `x-ratelimit-cost` into the
//! OpenAPI document, so the rule a client reads is the rule the code applies.
//!
//! Writes are priced so that no unit adds more than ~1.4 KiB to the store, even in the worst
//! cases (128-character names, a fresh `Idempotency-Key` per request, a body just under a
//! pricing step): at the default budget (50 units/s) one client adds at most ~256 MiB an hour
//! (README "Abuse budget", measured by `tests/abuse_budget.rs`). A read's cost is capped at
//! the caller's burst, so the largest read still fits an idle bucket; a write whose stored
//! bytes keep growing with its input is refused (`413`) when it costs more than the burst,
//! since capping its charge would let it store more than it paid for.

use chrono::NaiveDate;

/// How one operation is charged.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Grows with the body: base + body bytes / the divisor. `Capped`: what the request can
    /// store is bounded whatever its size (a page-day's HyperLogLog is at most 12 KiB), so the
    /// charge is capped at the burst; `Uncapped`: stored bytes grow with the body.
    PerBody(u64, u64, Cap),
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
    /// `POST /v1/queues/{queue}/claim`: 2 + `wait_ms` / 1000 from its small body (at most
    /// 22), so a long poll pays for the time it holds a waiting place.
    Claim,
    /// `POST /v1/locks/{name}`: 1 + `wait_ms` / 1000 from its small body (at most 11), so a
    /// waiting acquisition pays for the time it holds a waiting place.
    LockWait,
    /// Paged listings of large items: `1 + limit / 100` (`limit` defaults to 100).
    PerLimit100,
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
        Rule::PerBody(1, 512, Cap::Capped),
        "1 + body bytes / 512",
    ),
    (
        "POST",
        "/v1/dedup/{filter}/check",
        Rule::PerBody(1, 4096, Cap::Capped),
        BODY_RULE,
    ),
    (
        "POST",
        "/v1/dedup/{filter}/filter",
        Rule::PerBody(1, 512, Cap::Capped),
        "1 + body bytes / 512",
    ),
    // A member longer than 64 bytes turns a layer's sorted set from a listpack into a skip
    // list and a hash table (~1.3 KB for a new 128-character layer holding one): a body under
    // 512 B carries 3-5 such places, ~2 KB, so a batch starts at 2 units (README "Abuse
    // budget"). A 1,000-place batch with short names still fits the default burst.
    (
        "POST",
        "/v1/geo/{layer}",
        Rule::PerBody(2, 512, Cap::Uncapped),
        "2 + body bytes / 512 (a body costing more than the caller's burst is refused with 413)",
    ),
    (
        "POST",
        "/v1/uv/{page}",
        Rule::PerBody(1, 384, Cap::Capped),
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
    // Lock steps are single-key, storing ~250 B per new name (holder and fencing counter): 1
    // for renew, release and inspect, and for an acquisition that does not wait. One that
    // waits holds a place among the lock's waiting acquisitions and a connection (no store
    // connection: it sleeps on a wake-up) for its `wait_ms`, and tries once more at its end:
    // one unit more per second it may wait, 11 at the longest wait, within the default burst.
    (
        "POST",
        "/v1/locks/{name}",
        Rule::LockWait,
        "1 + wait_ms / 1000 (a waiting acquisition pays for the time it may wait: 11 at the longest)",
    ),
    // A job's payload is up to 64 KiB and is stored as sent: ~1 KiB per unit keeps the
    // abuse budget. Its id is stored three times (due set, meta and payload hashes), and one
    // longer than 64 bytes turns all three from listpacks into hash tables and a skip list:
    // a small job with a 128-character id on a new queue stores ~2.5 KB, ~3.4 KB with a
    // 1,023-byte body, hence the base of 3 (README "Abuse budget"). The largest job (67
    // units, 68 with an Idempotency-Key) still fits the default burst.
    (
        "POST",
        "/v1/queues/{queue}/jobs",
        Rule::PerBody(3, 1024, Cap::Uncapped),
        "3 + body bytes / 1024 (a body costing more than the caller's burst is refused with 413)",
    ),
    // Up to 100 jobs moved and up to 1 MiB of payloads read in one script: 2. A long poll
    // also holds one of the queue's waiting places (and a connection) for its `wait_ms` and
    // looks once more at its end: one unit more per second it may wait, 22 at the longest
    // wait, within the default burst.
    (
        "POST",
        "/v1/queues/{queue}/claim",
        Rule::Claim,
        "2 + wait_ms / 1000 (a long poll pays for the time it may wait: 22 at the longest)",
    ),
    (
        "GET",
        "/v1/queues/{queue}/dead",
        Rule::PerLimit100,
        "1 + limit / 100",
    ),
];

const BODY_RULE: &str = "1 + body bytes / 4096";

/// Units an `Idempotency-Key` adds to any request that sends one: the first reply is kept for
/// 24 h under the key (~200–600 B with its fingerprint), whatever it was — a refusal, a denied
/// check or a peek included — so a fresh key per request stores that much more than the
/// request alone (README "Abuse budget"). The total stays within the caller's burst.
pub const IDEMPOTENCY_KEY_UNITS: u64 = 1;

/// Whether [`cost`] needs the request's body for `method route` (small bodies only).
pub fn needs_body(method: &str, route: &str) -> bool {
    matches!(
        rule(method, route),
        Some(Rule::MergeDays | Rule::RateLimitCheck | Rule::Claim | Rule::LockWait)
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
        Rule::PerBody(base, divisor, Cap::Uncapped) => {
            let cost = base + content_length.unwrap_or(0) / divisor;
            if cost > limit {
                return Charge::TooCostly { cost, limit };
            }
            cost
        }
        Rule::PerBody(base, divisor, Cap::Capped) => base + content_length.unwrap_or(0) / divisor,
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
        Rule::Claim => {
            #[derive(serde::Deserialize)]
            struct Claim {
                wait_ms: Option<u64>,
            }
            // An empty body takes the defaults (no wait); a body the handler will refuse
            // costs 2 (the handler says what is wrong with it).
            let wait_ms = body
                .filter(|b| !b.is_empty())
                .and_then(|b| serde_json::from_slice::<Claim>(b).ok())
                .and_then(|c| c.wait_ms)
                .filter(|w| *w <= crate::queues::logic::MAX_WAIT_MS)
                .unwrap_or(0);
            2 + wait_ms / 1000
        }
        Rule::LockWait => {
            #[derive(serde::Deserialize)]
            struct Acquire {
                wait_ms: Option<u64>,
            }
            // A body the handler will refuse costs 1 (the handler says what is wrong with it).
            let wait_ms = body
                .and_then(|b| serde_json::from_slice::<Acquire>(b).ok())
                .and_then(|a| a.wait_ms)
                .filter(|w| *w <= crate::locks::logic::MAX_WAIT_MS)
                .unwrap_or(0);
            1 + wait_ms / 1000
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
        assert_eq!(units("POST", enqueue, None, Some(60), 101), 3);
        assert_eq!(units("POST", enqueue, None, Some(64 * 1024 + 60), 101), 67);
        let claim = |body: &str, limit| {
            cost(
                "POST",
                "/v1/queues/{queue}/claim",
                None,
                None,
                Some(body.as_bytes()),
                limit,
            )
        };
        assert!(needs_body("POST", "/v1/queues/{queue}/claim"));
        assert_eq!(
            claim("", 101),
            Charge::Units(2),
            "an empty body takes the defaults"
        );
        assert_eq!(claim(r#"{"max":100}"#, 101), Charge::Units(2));
        assert_eq!(claim(r#"{"wait_ms":999}"#, 101), Charge::Units(2));
        assert_eq!(claim(r#"{"wait_ms":5000}"#, 101), Charge::Units(7));
        assert_eq!(
            claim(r#"{"max":10,"visibility_ms":60000,"wait_ms":20000}"#, 101),
            Charge::Units(22)
        );
        assert_eq!(
            claim(r#"{"wait_ms":20001}"#, 101),
            Charge::Units(2),
            "refused"
        );
        assert_eq!(claim("not json", 101), Charge::Units(2));
        assert_eq!(
            claim(r#"{"wait_ms":20000}"#, 10),
            Charge::Units(10),
            "capped at the burst"
        );
        let dead = "/v1/queues/{queue}/dead";
        assert_eq!(units("GET", dead, Some("limit=1000"), None, 101), 11);
        assert_eq!(units("GET", dead, None, None, 101), 2);
        // Input the handler will refuse still costs at least 1.
        assert_eq!(units("GET", "/v1/uv", Some("pages=&from=x"), None, 101), 1);
    }

    #[test]
    fn a_lock_acquisition_pays_for_the_time_it_may_wait() {
        let acquire = |body: &str, limit| {
            cost(
                "POST",
                "/v1/locks/{name}",
                None,
                None,
                Some(body.as_bytes()),
                limit,
            )
        };
        assert!(needs_body("POST", "/v1/locks/{name}"));
        assert!(!needs_body("POST", "/v1/locks/{name}/renew"));
        let lock = r#"{"owner":"w","ttl_ms":30000"#;
        assert_eq!(acquire(&format!("{lock}}}"), 101), Charge::Units(1));
        assert_eq!(
            acquire(&format!(r#"{lock},"wait_ms":999}}"#), 101),
            Charge::Units(1)
        );
        assert_eq!(
            acquire(&format!(r#"{lock},"wait_ms":5000}}"#), 101),
            Charge::Units(6)
        );
        assert_eq!(
            acquire(&format!(r#"{lock},"wait_ms":10000}}"#), 101),
            Charge::Units(11)
        );
        assert_eq!(
            acquire(&format!(r#"{lock},"wait_ms":10001}}"#), 101),
            Charge::Units(1),
            "refused"
        );
        assert_eq!(acquire("not json", 101), Charge::Units(1));
        assert_eq!(
            acquire(&format!(r#"{lock},"wait_ms":10000}}"#), 5),
            Charge::Units(5),
            "capped at the burst"
        );
        assert_eq!(
            units("POST", "/v1/locks/{name}/renew", None, Some(60), 101),
            1
        );
    }

    #[test]
    fn writes_whose_bytes_grow_with_the_input_are_refused_above_the_burst() {
        let geo = |len| cost("POST", "/v1/geo/{layer}", None, Some(len), None, 100);
        assert_eq!(geo(50_000), Charge::Units(99));
        assert_eq!(
            geo(60_000),
            Charge::TooCostly {
                cost: 119,
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
