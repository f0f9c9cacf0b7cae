//! The global limiter (docs/api.md "Global limiter"): a tower [`Layer`] that spends one unit of the
//! client's GCRA bucket per request, with the same store call as `POST /v1/ratelimit/check`, so
//! every gateway instance on one store shares one budget per client.
//!
//! The client is the configured API client the `identify` layer (outside this one) found for
//! the request's `X-Api-Key`, with that client's own budget; otherwise the peer address.
//!
//! Each decision is a step in a store call shared by the requests of the same client that a
//! worker takes up together ([`batch`]); nothing serialises requests of different clients in
//! the gateway. Who the client is (the configured API client, the peer address, the
//! `X-Forwarded-For` walk) is [`crate::middleware::ClientKey`]'s business.

mod batch;
#[cfg(test)]
mod outcomes;
mod refusals;
mod stacked;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use tower::{Layer, Service};

use super::costs::{Charge, Terms};
use super::FastMap;
use crate::auth::Credentials;
use crate::clients::{BadKey, Caller};
use crate::config::{FailPolicy, GlobalLimit};
use crate::error::ApiError;
use crate::gcra::{Decision, Gcra};
use crate::middleware::ClientKey;
use crate::policies::{Policies, GLOBAL};
use crate::store::error::StoreError;
use crate::store::Store;

/// Paths never limited: probes and scrapes must work while a client is over its budget. The
/// ops router is merged outside this layer already; this list keeps them exempt even if a
/// future change mounts them under it.
const EXEMPT: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Until [`GlobalRateLimitLayer::with_terms`]: every request costs 1.
static NO_TERMS: Terms = Terms::none();

/// Largest body read to price a request (`POST /v1/uv/merge`: 20 names and two dates).
const MAX_PRICED_BODY: usize = 16 * 1024;

/// Who the limiter charged and what it decided, left in the response's extensions for the
/// access log.
#[derive(Debug, Clone)]
pub struct LimiterNote {
    pub client: String,
    pub outcome: &'static str,
}

/// Applies the global limiter to every request of the services it wraps.
#[derive(Debug, Clone)]
pub struct GlobalRateLimitLayer {
    limiter: Arc<Limiter>,
}

#[derive(Debug, Clone)]
struct Limiter {
    gcra: Gcra,
    fail: FailPolicy,
    /// Refusals are counted and logged as `would_limit`, and the request is served.
    shadow: bool,
    clients: ClientKey,
    /// What each route costs.
    terms: &'static Terms,
    /// The largest body read to price a request that does not say its length.
    body_limit: usize,
    /// `RateLimit-Policy`, the same on every response.
    policy: HeaderValue,
    /// Unix second of the last fail-open warning: with the store down every request fails
    /// open, and one line a second says so without flooding the log (the metric counts all).
    warned_at: Arc<AtomicU64>,
    /// The store, reached through batches of a busy client's concurrent steps ([`batch`]).
    batcher: Arc<batch::Batcher>,
    decisions: Arc<Decisions>,
    /// The limit policies stacked on this layer (docs/policies.md); none by default.
    policies: Option<Arc<Policies>>,
    /// End-user JWTs, which name the user of a `by = "user"` policy.
    credentials: Option<Arc<Credentials>>,
    /// The store, for the calls that decide several buckets at once.
    store: Store,
}

impl GlobalRateLimitLayer {
    /// Limits each client to `policy` (burst, count per period) in `store`, failing as
    /// `policy.fail` says when the store is down. Clients are the configured API client of the
    /// request (with its own budget when it has one), else the peer address; no proxy is
    /// trusted.
    pub fn new(store: Store, policy: &GlobalLimit) -> Self {
        let gcra = Gcra::new(policy.max_burst, policy.count_per_period, policy.period);
        let header = policy_header(&gcra);
        Self {
            limiter: Arc::new(Limiter {
                gcra,
                fail: policy.fail,
                shadow: policy.shadow,
                clients: ClientKey::default(),
                body_limit: 1024 * 1024,
                terms: &NO_TERMS,
                policy: header,
                warned_at: Arc::default(),
                batcher: Arc::new(batch::Batcher::new(store.clone())),
                decisions: Arc::default(),
                policies: None,
                credentials: None,
                store,
            }),
        }
    }

    /// Believes `X-Forwarded-For` from peers in `proxies`.
    ///
    /// Only list proxies you run: a trusted peer can put any client address in that header,
    /// and so give itself any number of budgets. Behind a proxy that is *not* listed, every
    /// client shares the proxy's one budget.
    pub fn with_trusted_proxies(mut self, proxies: Vec<IpNet>) -> Self {
        Arc::make_mut(&mut self.limiter).clients = ClientKey::new(proxies);
        self
    }

    /// Bodies are at most `bytes` (`GATEWAY_BODY_LIMIT`): a body without a `Content-Length`
    /// is read up to this to be priced, and is 413 beyond it.
    /// Prices requests by `terms` (the routes' own, by default).
    pub fn with_terms(mut self, terms: &'static Terms) -> Self {
        Arc::make_mut(&mut self.limiter).terms = terms;
        self
    }

    /// Stacks `policies` on the global budget; `credentials` verify the end-user JWTs a
    /// `by = "user"` policy reads the user from.
    pub fn with_policies(mut self, policies: Arc<Policies>, credentials: Arc<Credentials>) -> Self {
        let limiter = Arc::make_mut(&mut self.limiter);
        limiter.policies = Some(policies);
        limiter.credentials = Some(credentials);
        self
    }

    pub fn with_body_limit(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.limiter).body_limit = bytes;
        self
    }
}

impl<S> Layer<S> for GlobalRateLimitLayer {
    type Service = GlobalRateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GlobalRateLimit {
            inner,
            limiter: self.limiter.clone(),
        }
    }
}

/// The service [`GlobalRateLimitLayer`] builds.
#[derive(Debug, Clone)]
pub struct GlobalRateLimit<S> {
    inner: S,
    limiter: Arc<Limiter>,
}

impl<S> Service<Request> for GlobalRateLimit<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The service that was polled ready is the one to call; leave a fresh clone behind
        // (tower's "be careful when cloning inner services").
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        if EXEMPT.contains(&req.uri().path()) {
            return Box::pin(pass(inner, req));
        }
        Box::pin(self.limiter.clone().decide(inner, req))
    }
}

async fn pass<S>(mut inner: S, req: Request) -> Result<Response, Infallible>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    inner.call(req).await
}

impl Limiter {
    async fn decide<S>(self: Arc<Self>, inner: S, req: Request) -> Result<Response, Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let caller = req.extensions().get::<Caller>();
        // A refused X-Api-Key (the identify layer left it to this layer): charged to the
        // address like any request, then answered with its 401 or 400.
        let bad_key = req.extensions().get::<BadKey>().copied();
        let client = match caller {
            Some(caller) => caller.identity.clone(),
            None => {
                let peer = req
                    .extensions()
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|ConnectInfo(addr)| addr.ip());
                self.clients.client(None, req.headers(), peer)
            }
        };
        let caller = caller.and_then(|c| c.client.clone());
        let label = caller.as_ref().map_or(ANONYMOUS, |c| c.id.as_str());
        // A client with a budget of its own: its GCRA and policy, else the global ones.
        let own = caller.as_ref().and_then(|c| c.limits).map(|l| {
            let gcra = Gcra::new(l.burst, l.count, l.period);
            (gcra, policy_header(&gcra))
        });
        // An override of the global layer for this client (docs/policies.md "Overrides and
        // denies"): looked up only while any is in force.
        let overridden = self.overridden(GLOBAL, &client);
        if let Some(o) = &overridden {
            if o.stored.deny && !self.admin(req.headers()) {
                self.decisions.count(GLOBAL, "denied", label);
                return Ok(denied(GLOBAL, client));
            }
        }
        let own = match overridden.as_ref().and_then(|o| o.gcra) {
            Some(gcra) => Some((gcra, policy_header(&gcra))),
            None => own,
        };
        let (gcra, policy) = own
            .as_ref()
            .map_or((&self.gcra, &self.policy), |(g, p)| (g, p));
        let (req, quantity) = if bad_key.is_some() {
            (req, 1)
        } else {
            match self.price(req, gcra.limit, label).await {
                Ok(priced) => priced,
                Err(refused) => return Ok(refused),
            }
        };
        let mut req = req;
        if bad_key.is_none() {
            if let Some(policies) = &self.policies {
                let table = policies.current();
                let route = req
                    .extensions()
                    .get::<MatchedPath>()
                    .map_or("", MatchedPath::as_str);
                let applying = table.applying(req.method().as_str(), route);
                if !applying.is_empty() {
                    let identities = stacked::Identities {
                        client: &client,
                        clients: &self.clients,
                        credentials: self.credentials.as_deref(),
                        body_limit: self.body_limit,
                    };
                    let ids;
                    (req, ids) = match identities.of(applying, req).await {
                        Ok(found) => found,
                        Err(refused) => return Ok(refused),
                    };
                    // A request none of them counts (no user, no such header) costs what a
                    // request no policy applies to does: the global layer's batched path.
                    if ids.iter().any(Option::is_some) {
                        let global = stacked::Global {
                            client: &client,
                            gcra,
                            header_item: policy.to_str().unwrap_or_default(),
                            shadow: self.shadow,
                        };
                        return self
                            .decide_stacked(inner, req, &global, applying, &ids, quantity, label)
                            .await;
                    }
                }
            }
        }
        let throttled = self.batcher.throttle(&client, gcra, quantity).await;
        let (mut response, outcome) = match throttled {
            Ok(decision) if decision.allowed || self.shadow => {
                let outcome = if decision.allowed {
                    "allowed"
                } else {
                    shadow_refusal(label);
                    "would_limit"
                };
                let mut response = match bad_key {
                    Some(bad) => bad.error().into_response(),
                    None => pass(inner, req).await?,
                };
                set_headers(&decision, policy, response.headers_mut());
                (response, outcome)
            }
            Ok(decision) => {
                let retry_after = decision.retry_after_secs().unwrap_or(gcra.window_secs());
                let mut response = ApiError::RateLimited {
                    retry_after: u64::try_from(retry_after).unwrap_or(1),
                    policy: GLOBAL.to_owned(),
                }
                .into_response();
                set_headers(&decision, policy, response.headers_mut());
                (response, "limited")
            }
            Err(e) => match bad_key {
                Some(bad) => (bad.error().into_response(), "fail_open"),
                None => self.store_failed(e, inner, req).await?,
            },
        };
        self.decisions.count(GLOBAL, outcome, label);
        response
            .extensions_mut()
            .insert(LimiterNote { client, outcome });
        Ok(response)
    }

    /// A request that limit policies apply to: every limit decided in one store call
    /// ([`stacked`]), the request served only when each enforced one admits it.
    async fn decide_stacked<S>(
        &self,
        inner: S,
        req: Request,
        global: &stacked::Global<'_>,
        applying: &[Arc<crate::policies::Policy>],
        ids: &[Option<String>],
        quantity: u64,
        label: &str,
    ) -> Result<Response, Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let client = global.client.to_owned();
        // A client this worker knows the global layer refuses is answered without the store,
        // as on the global layer's own path: nothing would be spent anyway.
        if !global.shadow {
            if let Some(refused) = self
                .batcher
                .known_refusal(global.client, global.gcra, quantity)
            {
                let retry_after = refused
                    .retry_after_secs()
                    .unwrap_or(global.gcra.window_secs());
                let mut response = ApiError::RateLimited {
                    retry_after: u64::try_from(retry_after).unwrap_or(1),
                    policy: GLOBAL.to_owned(),
                }
                .into_response();
                let header = HeaderValue::from_str(global.header_item).ok();
                if let Some(header) = header {
                    set_headers(&refused, &header, response.headers_mut());
                }
                self.decisions.count(GLOBAL, "limited", label);
                response.extensions_mut().insert(LimiterNote {
                    client,
                    outcome: "limited",
                });
                return Ok(response);
            }
        }
        let mut limits = Vec::with_capacity(applying.len());
        for (p, id) in applying.iter().zip(ids) {
            let Some(id) = id else { continue };
            let overridden = self.overridden(p.name.as_str(), id);
            if overridden.as_ref().is_some_and(|o| o.stored.deny) && !self.admin(req.headers()) {
                self.decisions.count(p.name.as_str(), "denied", label);
                return Ok(denied(p.name.as_str(), client));
            }
            limits.push(stacked::Limit::of(p, id, overridden.as_deref()));
        }
        // Not learned from: on a Cluster a refusal seen here may be a charge that another
        // slot's refusal is about to give back (docs/policies.md "On a Cluster").
        let decided = stacked::decide(&self.store, global, &limits, quantity).await;
        let (mut response, outcome) = match decided {
            Ok(decided) => {
                let refused = stacked::refusing(&decided);
                for d in &decided {
                    let outcome = match (d.decision.allowed, d.shadow, refused) {
                        (true, _, None) => "allowed",
                        (false, true, None) => "would_limit",
                        (false, false, _) => "limited",
                        // Admitted by this limit, refused by another: nothing spent here.
                        (_, _, Some(_)) => continue,
                    };
                    if outcome == "would_limit" {
                        shadow_refusal(label);
                    }
                    self.decisions.count(d.name, outcome, label);
                }
                let mut response = match refused {
                    Some(refused) => stacked::refusal(refused),
                    None => pass(inner, req).await?,
                };
                stacked::set_headers(&decided, response.headers_mut());
                let outcome = if refused.is_some() {
                    "limited"
                } else {
                    "allowed"
                };
                (response, outcome)
            }
            Err(e) => {
                let (response, outcome) = self.store_failed(e, inner, req).await?;
                self.decisions.count(GLOBAL, outcome, label);
                (response, outcome)
            }
        };
        response
            .extensions_mut()
            .insert(LimiterNote { client, outcome });
        Ok(response)
    }

    /// The override in force of `policy` for the identity `key`, if any.
    fn overridden(
        &self,
        policy: &str,
        key: &str,
    ) -> Option<Arc<crate::policies::overrides::Override>> {
        let overrides = self.policies.as_ref()?.overrides();
        if overrides.is_empty() {
            return None;
        }
        overrides.find(policy, key)
    }

    /// Whether the request carries the admin token: denies never lock the operator out.
    fn admin(&self, headers: &HeaderMap) -> bool {
        self.credentials
            .as_ref()
            .is_some_and(|c| c.is_admin(headers))
    }

    /// What `req` costs, known before any store work: from its request line and headers, from
    /// the small body of the routes priced by their fields, and from the bytes of a body that
    /// does not state its length (chunked, or HTTP/2 without `content-length`), which is read
    /// here whole — up to the body limit, 413 beyond — so that a body's framing never changes
    /// its price (docs/ratelimit.md "Route costs"). `Err`: the answer, a 413.
    async fn price(
        &self,
        req: Request,
        limit: u64,
        label: &str,
    ) -> Result<(Request, u64), Response> {
        let matched = req.extensions().get::<MatchedPath>().cloned();
        let route = matched.as_ref().map_or("", MatchedPath::as_str);
        let stated = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let method = req.method().clone();
        let method = method.as_str();
        let fields = self.terms.needs_body(method, route);
        // A body is read here when the price needs its fields (small bodies only), or its
        // length and it does not say it; a request with no body at all is never read.
        let read = if fields {
            Some(MAX_PRICED_BODY.min(self.body_limit))
        } else if stated.is_none() && !axum::body::HttpBody::is_end_stream(req.body()) {
            Some(self.body_limit)
        } else {
            None
        };
        let (req, body) = match read {
            None => (req, None),
            Some(max) => {
                let (parts, body) = req.into_parts();
                match axum::body::to_bytes(body, max).await {
                    Ok(bytes) => (
                        Request::from_parts(parts, axum::body::Body::from(bytes.clone())),
                        Some(bytes),
                    ),
                    Err(e) => return Err(body_refused(e, route, fields, max)),
                }
            }
        };
        let length = stated.or_else(|| body.as_ref().map(|b| b.len() as u64));
        let body = if fields { body } else { None };
        match self.terms.cost(
            method,
            route,
            req.uri().query(),
            length,
            body.as_deref(),
            limit,
        ) {
            Charge::Units(n) => {
                let keyed = req.headers().contains_key(IDEMPOTENCY_KEY);
                let n = if keyed {
                    (n + super::costs::IDEMPOTENCY_KEY_UNITS).min(limit.max(1))
                } else {
                    n
                };
                Ok((req, n))
            }
            Charge::TooCostly { cost, limit } => {
                self.decisions.count(GLOBAL, "too_costly", label);
                Err(ApiError::PayloadTooLarge(format!(
                    "this request costs {cost} rate-limit units, more than the burst of {limit} \
                     this client may spend at once; send a smaller request"
                ))
                .into_response())
            }
        }
    }

    async fn store_failed<S>(
        &self,
        e: StoreError,
        inner: S,
        req: Request,
    ) -> Result<(Response, &'static str), Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        match self.fail {
            FailPolicy::Open => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                if self.warned_at.swap(now, Ordering::Relaxed) != now {
                    tracing::warn!(error = %e, "global limiter cannot reach the store; serving unlimited (GATEWAY_GLOBAL_FAIL=open)");
                }
                Ok((pass(inner, req).await?, "fail_open"))
            }
            FailPolicy::Closed => {
                // Whatever went wrong, the client sees the store as unavailable: 503, not 500.
                let e = match e {
                    StoreError::Internal(msg) => StoreError::Unavailable(msg),
                    other => other,
                };
                Ok((
                    ApiError::BackendUnavailable(e).into_response(),
                    "fail_closed",
                ))
            }
        }
    }
}

/// The answer to a denied identity: 403, naming the policy that denies it.
fn denied(policy: &str, client: String) -> Response {
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

/// The answer to a body that could not be read whole to be priced: too big (413), or broken
/// off or malformed on the way (400).
pub(super) fn body_refused(e: axum::Error, route: &str, fields: bool, max: usize) -> Response {
    let too_big = std::error::Error::source(&e)
        .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
    if too_big {
        let what = if fields {
            format!("a {route} body")
        } else {
            "a request body".to_owned()
        };
        ApiError::PayloadTooLarge(format!("{what} is at most {max} bytes")).into_response()
    } else {
        ApiError::invalid(format!("the request body could not be read: {e}")).into_response()
    }
}

/// Both header generations: the IETF draft's structured fields and the `RateLimit-*` trio.
fn set_headers(d: &Decision, policy: &HeaderValue, headers: &mut HeaderMap) {
    set_headers_named(GLOBAL, d, policy, headers);
}

/// [`set_headers`] describing the limit `name` (the one closest to refusing).
fn set_headers_named(name: &str, d: &Decision, policy: &HeaderValue, headers: &mut HeaderMap) {
    // Names as constants: a `&str` name is parsed and checked on every insert, which was
    // the most expensive part of this function (callgrind, issue 19).
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
fn policy_header(gcra: &Gcra) -> HeaderValue {
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
const ANONYMOUS: &str = "anonymous";

/// Would-be refusals in shadow mode, per client.
fn shadow_refusal(client: &str) {
    metrics::counter!("gateway_limiter_shadow_refusals_total", "client" => client.to_owned())
        .increment(1);
}

/// `gateway_limiter_decisions_total` handles, resolved once per (policy, outcome, client
/// label) — through the macro every request built a labelled key and allocated its strings
/// (issue 19). Per limiter rather than process-wide, so each resolves under the recorder in
/// force where it is used (tests install their own). `policy` is `global` or a policy's name
/// from the file: bounded like the client label.
#[derive(Debug, Default)]
struct Decisions(RwLock<Counters>);

type Counters = FastMap<&'static str, FastMap<String, FastMap<String, metrics::Counter>>>;

impl Decisions {
    fn count(&self, policy: &str, outcome: &'static str, client: &str) {
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

#[cfg(test)]
mod tests {
    use axum::extract::connect_info::MockConnectInfo;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::outcomes::Outcomes;
    use super::*;
    use crate::config::Settings;
    use crate::store::memory::MemoryStore;

    /// One request a minute, no burst.
    fn policy(fail: FailPolicy) -> GlobalLimit {
        GlobalLimit {
            enabled: true,
            shadow: false,
            max_burst: 0,
            count_per_period: 1,
            period: 60,
            fail,
        }
    }

    /// A router with one limited route and a probe mounted (wrongly) under the limiter.
    fn router(fail: FailPolicy) -> Router {
        let settings = Settings::defaults();
        let store = Store::Memory(MemoryStore::new(&settings));
        Router::new()
            .route("/x", get(|| async { "x" }))
            .route("/healthz", get(|| async { "ok" }))
            .layer(GlobalRateLimitLayer::new(store, &policy(fail)))
            .layer(MockConnectInfo(SocketAddr::from(([192, 0, 2, 1], 4711))))
    }

    async fn call(app: &Router, path: &str) -> Response {
        let req = Request::get(path).body(axum::body::Body::empty()).unwrap();
        app.clone().oneshot(req).await.unwrap()
    }

    #[tokio::test]
    async fn decisions_are_counted_by_outcome() {
        let outcomes = Outcomes::default();
        let _recorder = metrics::set_default_local_recorder(&outcomes);
        let app = router(FailPolicy::Open);
        assert_eq!(call(&app, "/x").await.status(), 200);
        assert_eq!(call(&app, "/x").await.status(), 429);
        assert_eq!(call(&app, "/healthz").await.status(), 200);
        assert_eq!((outcomes.get("allowed"), outcomes.get("limited")), (1, 1));

        // A Redis nobody listens on: open serves, closed refuses, and both are counted.
        let mut settings = Settings::defaults();
        settings.store = crate::config::StoreChoice::Redis("redis://127.0.0.1:1".to_owned());
        settings.store_timeout = std::time::Duration::from_millis(100);
        let store = Store::open(&settings).await.unwrap();
        for (fail, status) in [(FailPolicy::Open, 200), (FailPolicy::Closed, 503)] {
            let app = Router::new()
                .route("/x", get(|| async { "x" }))
                .layer(GlobalRateLimitLayer::new(store.clone(), &policy(fail)));
            for _ in 0..2 {
                let response = call(&app, "/x").await;
                assert_eq!(response.status(), status);
                assert!(response.headers().get("ratelimit").is_none());
            }
        }
        assert_eq!(
            (outcomes.get("fail_open"), outcomes.get("fail_closed")),
            (2, 2)
        );
    }

    #[tokio::test]
    async fn limits_per_peer_and_exempts_probes_even_under_the_layer() {
        let app = router(FailPolicy::Open);
        let first = call(&app, "/x").await;
        assert_eq!(first.status(), 200);
        assert_eq!(first.headers()["ratelimit"], "\"global\";r=0;t=60");
        assert_eq!(first.headers()["ratelimit-policy"], "\"global\";q=1;w=60");
        let second = call(&app, "/x").await;
        assert_eq!(second.status(), 429);
        assert_eq!(second.headers()["retry-after"], "60");
        for _ in 0..3 {
            let probe = call(&app, "/healthz").await;
            assert_eq!(probe.status(), 200);
            assert!(probe.headers().get("ratelimit").is_none());
        }
    }
}
