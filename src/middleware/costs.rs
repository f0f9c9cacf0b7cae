//! What a request costs the global limiter (docs/ratelimit.md "Route costs"): the GCRA quantity it
//! spends, known before any store work — from the request line and headers, the body's length,
//! and for a few routes the fields of their small bodies. Each route states its own rule
//! beside its handler ([`RouteTerms`], a domain's `TERMS`), put together into one [`Terms`]
//! where the app is composed; this module holds the arithmetic every rule shares and never
//! names a route. The same terms write each operation's `x-ratelimit-cost` into the OpenAPI
//! document, so the rule a client reads is the rule the code applies.
//!
//! Writes are priced so that no unit adds more than ~1.4 KiB to the store, even in the worst
//! cases (128-character names, a fresh `Idempotency-Key` per request, a body just under a
//! pricing step): at the default budget (50 units/s) one client adds at most ~256 MiB an hour
//! (docs/performance.md "Abuse budget", measured by `tests/abuse_budget.rs`). A read's cost is
//! capped at the caller's burst, so the largest read still fits an idle bucket; a write whose
//! stored bytes keep growing with its input is refused (`413`) when it costs more than the burst,
//! since capping its charge would let it store more than it paid for.

use std::time::Duration;

use chrono::NaiveDate;

/// How one operation is charged. Every operation without a rule costs 1.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// A fixed price, whatever the request (at most the caller's burst).
    Fixed(u64),
    /// Grows with the body: `base + body bytes / divisor`.
    PerBody { base: u64, divisor: u64, cap: Cap },
    /// From the query string (reads: capped at the burst). At least 1.
    Query(fn(&Query<'_>) -> u64),
    /// From the fields of a small body (read whole before the charge; empty when there is
    /// none). A body the handler will refuse should cost the least: the handler says what is
    /// wrong with it. At least 1.
    Body(fn(&[u8]) -> u64, Cap),
}

/// What a charge above the caller's burst means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// What the request can store is bounded whatever its size (a page-day's HyperLogLog is at
    /// most 12 KiB), or it stores nothing: charged at most the burst.
    Capped,
    /// Stored bytes grow with the input: refused (`413`), it could never be paid for.
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

/// What one route declares of itself to the shared layers: what it costs the global limiter,
/// the rule as the OpenAPI document states it, and the longest it waits server-side on purpose
/// (a long poll's request timeout is extended by that, so its whole wait is honoured).
#[derive(Debug, Clone, Copy)]
pub struct RouteTerms {
    pub method: &'static str,
    /// The route template, as axum's `MatchedPath` has it.
    pub route: &'static str,
    pub cost: Rule,
    pub cost_text: &'static str,
    pub waits: Duration,
}

impl RouteTerms {
    pub const fn new(
        method: &'static str,
        route: &'static str,
        cost: Rule,
        cost_text: &'static str,
    ) -> Self {
        Self {
            method,
            route,
            cost,
            cost_text,
            waits: Duration::ZERO,
        }
    }

    /// The route waits up to `most` server-side (a long poll).
    pub const fn waiting(mut self, most: Duration) -> Self {
        self.waits = most;
        self
    }
}

/// The query string of a request, as cost rules read it: raw (a rule prices what the handler
/// will parse; a value it cannot read costs the least).
#[derive(Debug, Clone, Copy)]
pub struct Query<'a>(Option<&'a str>);

impl<'a> Query<'a> {
    /// The raw value of the first `name=` parameter.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.0?
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    }

    /// The days of an inclusive `from`..`to` range (`YYYY-MM-DD`), 1 without a valid one.
    pub fn days(&self) -> u64 {
        let day = |v: Option<&str>| v.and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        match (day(self.get("from")), day(self.get("to"))) {
            (Some(from), Some(to)) if to >= from => (to - from).num_days() as u64 + 1,
            _ => 1,
        }
    }

    /// A paged listing's `limit` (`crate::paging`): the default page when it is absent or
    /// not a number, at most the largest page.
    pub fn page_limit(&self) -> u64 {
        let limit = self.number("limit", crate::paging::DEFAULT_LIMIT as u64);
        limit.min(crate::paging::MAX_LIMIT as u64)
    }

    /// A number parameter, or `default` when it is absent or not a number.
    pub fn number(&self, name: &str, default: u64) -> u64 {
        self.get(name)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    }
}

/// Units an `Idempotency-Key` adds to any request that sends one: the first reply is kept for
/// 24 h under the key (~200–600 B with its fingerprint), whatever it was — a refusal, a denied
/// check or a peek included — so a fresh key per request stores that much more than the
/// request alone (docs/performance.md "Abuse budget"). The total stays within the caller's burst.
pub const IDEMPOTENCY_KEY_UNITS: u64 = 1;

/// Every route's terms, put together where the app is composed (`openapi::route_terms`).
#[derive(Debug)]
pub struct Terms {
    routes: Vec<RouteTerms>,
    /// The routes that wait on purpose: looked up on every request by the timeout layer, so
    /// kept apart from the longer list.
    long_polls: Vec<RouteTerms>,
}

impl Terms {
    /// No route has terms: every request costs 1, none waits.
    pub const fn none() -> Self {
        Self {
            routes: Vec::new(),
            long_polls: Vec::new(),
        }
    }

    pub fn new(routes: Vec<RouteTerms>) -> Self {
        let long_polls = routes
            .iter()
            .filter(|t| !t.waits.is_zero())
            .copied()
            .collect();
        Self { routes, long_polls }
    }

    fn find(&self, method: &str, route: &str) -> Option<&RouteTerms> {
        self.routes
            .iter()
            .find(|t| t.method == method && t.route == route)
    }

    /// Whether [`Self::cost`] needs the request's body for `method route` (small bodies only).
    pub fn needs_body(&self, method: &str, route: &str) -> bool {
        matches!(
            self.find(method, route).map(|t| t.cost),
            Some(Rule::Body(..))
        )
    }

    /// The charge of a request to `route` against a caller whose burst is `limit`. `body` is
    /// given when [`Self::needs_body`] says so.
    pub fn cost(
        &self,
        method: &str,
        route: &str,
        query: Option<&str>,
        content_length: Option<u64>,
        body: Option<&[u8]>,
        limit: u64,
    ) -> Charge {
        let limit = limit.max(1);
        let Some(terms) = self.find(method, route) else {
            return Charge::Units(1);
        };
        let (raw, cap) = match terms.cost {
            Rule::PerBody { base, divisor, cap } => {
                (base + content_length.unwrap_or(0) / divisor, cap)
            }
            Rule::Fixed(units) => (units, Cap::Capped),
            Rule::Query(rule) => (rule(&Query(query)), Cap::Capped),
            Rule::Body(rule, cap) => (rule(body.unwrap_or_default()), cap),
        };
        if cap == Cap::Uncapped && raw > limit {
            return Charge::TooCostly { cost: raw, limit };
        }
        Charge::Units(raw.clamp(1, limit))
    }

    /// The rule of `method route` as the OpenAPI document states it.
    pub fn rule_text(&self, method: &str, route: &str) -> &'static str {
        self.routes
            .iter()
            .find(|t| t.method.eq_ignore_ascii_case(method) && t.route == route)
            .map_or("1", |t| t.cost_text)
    }

    /// How long `method route` may wait server-side on purpose (zero for most routes).
    pub fn waits(&self, method: &str, route: &str) -> Duration {
        self.long_polls
            .iter()
            .find(|t| t.method == method && t.route == route)
            .map_or(Duration::ZERO, |t| t.waits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The composed routes' own terms, through the same calls the limiter makes.
    fn terms() -> &'static Terms {
        crate::openapi::route_terms()
    }

    fn needs_body(method: &str, route: &str) -> bool {
        terms().needs_body(method, route)
    }

    /// A POST of `body` (its length unsaid, as with chunked transfer).
    fn posted(route: &str, body: &str, limit: u64) -> Charge {
        terms().cost("POST", route, None, None, Some(body.as_bytes()), limit)
    }

    fn units(method: &str, route: &str, query: Option<&str>, len: Option<u64>, limit: u64) -> u64 {
        match terms().cost(method, route, query, len, None, limit) {
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
        // Input the handler will refuse still costs at least 1.
        assert_eq!(units("GET", "/v1/uv", Some("pages=&from=x"), None, 101), 1);
    }

    #[test]
    fn a_ratelimit_check_costs_by_its_algorithm_and_quantity() {
        let too_costly = Charge::TooCostly {
            cost: 626,
            limit: 101,
        };
        for (body, charge) in [
            (
                r#"{"key":"k","max_burst":1,"count_per_period":5000,"period":1,"quantity":5000}"#,
                Charge::Units(1),
            ),
            (
                r#"{"algorithm":"fixed_window","key":"k","count_per_period":5000,"period":1,"quantity":5000}"#,
                Charge::Units(1),
            ),
            (
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":5000,"period":1,"quantity":600}"#,
                Charge::Units(76),
            ),
            (
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":100,"period":1,"quantity":5000}"#,
                Charge::Units(13),
            ),
            (
                r#"{"algorithm":"sliding_window","key":"k","count_per_period":5000,"period":1,"quantity":5000}"#,
                too_costly,
            ),
        ] {
            assert_eq!(posted("/v1/ratelimit/check", body, 101), charge, "{body}");
        }
    }

    #[test]
    fn queue_costs_follow_the_payload_the_wait_and_the_page() {
        let enqueue = "/v1/queues/{queue}/jobs";
        assert_eq!(units("POST", enqueue, None, Some(60), 101), 3);
        assert_eq!(units("POST", enqueue, None, Some(64 * 1024 + 60), 101), 67);
        let claim = |body: &str, limit| posted("/v1/queues/{queue}/claim", body, limit);
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
    }

    #[test]
    fn a_lock_acquisition_pays_for_the_time_it_may_wait() {
        let acquire = |body: &str, limit| posted("/v1/locks/{name}", body, limit);
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
        let geo = |len| terms().cost("POST", "/v1/geo/{layer}", None, Some(len), None, 100);
        assert_eq!(geo(40_000), Charge::Units(94));
        assert_eq!(
            geo(50_000),
            Charge::TooCostly {
                cost: 117,
                limit: 100
            }
        );
        let merge = |body: &str| posted("/v1/uv/merge", body, 100);
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
