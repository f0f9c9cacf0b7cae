//! What each request costs the global limiter (API.md "Global limiter"): the GCRA quantity it
//! spends, known from the request line and headers before any store work. One unit for a
//! single-key read or write; more for requests whose store work grows with their input. The
//! same table writes each operation's `x-ratelimit-cost` into the OpenAPI document, so the
//! rule a client reads is the rule the code applies.

use chrono::NaiveDate;

/// How one operation is charged.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Grows with the body: batches.
    PerBody4KiB,
    /// `GET /v1/uv/{page}` over a `from`..`to` range.
    UvRange,
    /// `GET /v1/uv`: pages × days.
    UvUnion,
    /// `GET /v1/checkins/stats`: days.
    CheckinStats,
    /// `GET /v1/geo/{layer}/nearby`: results asked for.
    Nearby,
    /// A fixed charge.
    Fixed(u64),
}

/// (method, route template, rule, the rule as the document states it). Every other operation
/// costs 1.
const RULES: &[(&str, &str, Rule, &str)] = &[
    (
        "POST",
        "/v1/dedup/{filter}/items",
        Rule::PerBody4KiB,
        BODY_RULE,
    ),
    (
        "POST",
        "/v1/dedup/{filter}/check",
        Rule::PerBody4KiB,
        BODY_RULE,
    ),
    (
        "POST",
        "/v1/dedup/{filter}/filter",
        Rule::PerBody4KiB,
        BODY_RULE,
    ),
    ("POST", "/v1/geo/{layer}", Rule::PerBody4KiB, BODY_RULE),
    ("POST", "/v1/uv/{page}", Rule::PerBody4KiB, BODY_RULE),
    (
        "GET",
        "/v1/uv/{page}",
        Rule::UvRange,
        "1, or 1 + days / 31 for a from..to range",
    ),
    ("GET", "/v1/uv", Rule::UvUnion, "1 + pages × days / 366"),
    ("POST", "/v1/uv/merge", Rule::Fixed(20), "20"),
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
    // Locks: single-key steps. A waiting acquisition holds no store connection while it waits
    // (it sleeps on a wake-up), so its wait costs nothing extra.
    ("POST", "/v1/locks/{name}", Rule::Fixed(1), "1"),
    ("POST", "/v1/locks/{name}/renew", Rule::Fixed(1), "1"),
    ("DELETE", "/v1/locks/{name}", Rule::Fixed(1), "1"),
    ("GET", "/v1/locks/{name}", Rule::Fixed(1), "1"),
];

const BODY_RULE: &str = "1 + body bytes / 4096";

/// The charge of a request to `route`, capped at `limit` (the caller's whole burst), so the
/// most expensive request a client may send still fits an idle bucket.
pub fn cost(
    method: &str,
    route: &str,
    query: Option<&str>,
    content_length: Option<u64>,
    limit: u64,
) -> u64 {
    let Some(&(_, _, rule, _)) = RULES.iter().find(|(m, r, ..)| *m == method && *r == route) else {
        return 1;
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
        Rule::PerBody4KiB => 1 + content_length.unwrap_or(0) / 4096,
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
        Rule::Fixed(n) => n,
    };
    raw.clamp(1, limit.max(1))
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

    #[test]
    fn costs_follow_the_input_and_never_pass_the_limit() {
        assert_eq!(cost("GET", "/v1/checkins/{user_id}", None, None, 101), 1);
        assert_eq!(cost("POST", "/v1/uv/{page}", None, Some(100), 101), 1);
        assert_eq!(cost("POST", "/v1/uv/{page}", None, Some(40_000), 101), 10);
        assert_eq!(cost("POST", "/v1/uv/{page}", None, Some(1 << 20), 101), 101);
        let range = Some("from=2026-01-01&to=2026-12-31");
        assert_eq!(cost("GET", "/v1/uv/{page}", range, None, 101), 12);
        assert_eq!(
            cost("GET", "/v1/uv/{page}", Some("date=2026-01-01"), None, 101),
            1
        );
        let union = Some("pages=a,b,c,d&from=2026-01-01&to=2026-12-31");
        assert_eq!(cost("GET", "/v1/uv", union, None, 101), 4);
        let big = format!(
            "pages={}&from=2026-01-01&to=2026-12-31",
            vec!["p"; 100].join("%2C")
        );
        assert_eq!(cost("GET", "/v1/uv", Some(&big), None, 1000), 100);
        assert_eq!(cost("GET", "/v1/uv", Some(&big), None, 50), 50, "capped");
        assert_eq!(
            cost(
                "GET",
                "/v1/checkins/stats",
                Some("from=2026-01-01&to=2026-03-31"),
                None,
                101
            ),
            12
        );
        assert_eq!(
            cost(
                "GET",
                "/v1/geo/{layer}/nearby",
                Some("count=1000"),
                None,
                101
            ),
            11
        );
        assert_eq!(cost("POST", "/v1/uv/merge", None, None, 101), 20);
        // Input the handler will refuse still costs at least 1.
        assert_eq!(cost("GET", "/v1/uv", Some("pages=&from=x"), None, 101), 1);
    }
}
