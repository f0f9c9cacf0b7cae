//! What the limiter sends back besides the inner service's answer: refusals, the
//! `RateLimit` headers, and the decision counters.

use std::sync::{PoisonError, RwLock};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::gcra::{Decision, Gcra};
use crate::middleware::{FastMap, LimiterNote};
use crate::policies::GLOBAL;

/// The answer to a denied identity: 403, naming the policy that denies it.
pub(super) fn denied(policy: &str, client: String) -> Response {
    let mut response = ApiError::Forbidden(format!(
        "denied by the limit policy {policy:?} (an operator's deny; docs/policies.md)"
    ))
    .into_response();
    response.extensions_mut().insert(LimiterNote {
        client,
        outcome: "denied",
    });
    response
}

/// Both header generations: the IETF draft's structured fields and the `RateLimit-*` trio.
pub(super) fn set_headers(d: &Decision, policy: &HeaderValue, headers: &mut HeaderMap) {
    set_headers_named(GLOBAL, d, policy, headers);
}

/// [`set_headers`] describing the limit `name` (the one closest to refusing).
pub(super) fn set_headers_named(
    name: &str,
    d: &Decision,
    policy: &HeaderValue,
    headers: &mut HeaderMap,
) {
    // Names as constants: a `&str` name is parsed and checked on every insert, which was
    // the most expensive part of this function (callgrind).
    const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
    const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
    const LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
    const REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
    const RESET: HeaderName = HeaderName::from_static("ratelimit-reset");
    let reset = d.reset_after_secs();
    let mut digits = itoa::Buffer::new();
    let mut fields = Vec::with_capacity(48);
    fields.push(b'"');
    fields.extend_from_slice(name.as_bytes());
    fields.extend_from_slice(b"\";r=");
    fields.extend_from_slice(digits.format(d.remaining).as_bytes());
    fields.extend_from_slice(b";t=");
    fields.extend_from_slice(digits.format(reset).as_bytes());
    headers.reserve(5);
    if let Ok(fields) = HeaderValue::try_from(fields) {
        headers.insert(RATELIMIT, fields);
    }
    headers.insert(POLICY, policy.clone());
    headers.insert(LIMIT, HeaderValue::from(d.limit));
    headers.insert(REMAINING, HeaderValue::from(d.remaining));
    headers.insert(RESET, HeaderValue::from(reset));
}

/// `RateLimit-Policy` of a budget.
pub(super) fn policy_header(gcra: &Gcra) -> HeaderValue {
    HeaderValue::try_from(format!(
        "\"global\";q={};w={}",
        gcra.limit,
        gcra.window_secs()
    ))
    .expect("digits and quotes are a valid header")
}

/// The `client` label of the limiter's metrics. It must stay bounded whatever callers send, so
/// it is a configured client's id (bounded by the clients file) or, for every other caller,
/// `anonymous` — never a raw key or address.
pub(super) const ANONYMOUS: &str = "anonymous";

/// Would-be refusals in shadow mode, per client.
pub(super) fn shadow_refusal(client: &str) {
    metrics::counter!("gateway_limiter_shadow_refusals_total", "client" => client.to_owned())
        .increment(1);
}

/// `gateway_limiter_decisions_total` handles, resolved once per (policy, outcome, client
/// label) — through the macro every request built a labelled key and allocated its strings.
/// Per limiter rather than process-wide, so each resolves under the recorder in
/// force where it is used (tests install their own). `policy` is `global` or a policy's name
/// from the file: bounded like the client label.
#[derive(Debug, Default)]
pub(super) struct Decisions(RwLock<Counters>);

type Counters = FastMap<&'static str, FastMap<String, FastMap<String, metrics::Counter>>>;

impl Decisions {
    pub(super) fn count(&self, policy: &str, outcome: &'static str, client: &str) {
        let found = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(outcome)
            .and_then(|clients| clients.get(client))
            .and_then(|policies| policies.get(policy))
            .cloned();
        let counter = found.unwrap_or_else(|| {
            self.0
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(outcome)
                .or_default()
                .entry(client.to_owned())
                .or_default()
                .entry(policy.to_owned())
                .or_insert_with(|| {
                    metrics::counter!("gateway_limiter_decisions_total", "policy" => policy.to_owned(), "outcome" => outcome, "client" => client.to_owned())
                })
                .clone()
        });
        counter.increment(1);
    }
}

/// The global layer's refusal: 429 with `Retry-After` and the `RateLimit` headers of
/// `decision`.
pub(super) fn limited(decision: &Decision, gcra: &Gcra, policy: &HeaderValue) -> Response {
    let retry_after = decision.retry_after_secs().unwrap_or(gcra.window_secs());
    let mut response = ApiError::RateLimited {
        retry_after: u64::try_from(retry_after).unwrap_or(1),
        policy: GLOBAL.to_owned(),
    }
    .into_response();
    set_headers(decision, policy, response.headers_mut());
    response
}
