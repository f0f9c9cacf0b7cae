//! The global limiter (API.md "Global limiter"): a tower [`Layer`] that spends one unit of the
//! client's GCRA bucket per request, with the same store call as `POST /v1/ratelimit/check`, so
//! every gateway instance on one store shares one budget per client.
//!
//! Each decision is one store round trip made by the request's own task: no lock, no buffer,
//! nothing that serialises requests of different clients in the gateway.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use tower::{Layer, Service};

use crate::config::{FailPolicy, GlobalLimit};
use crate::error::ApiError;
use crate::ratelimit::logic::{Decision, Gcra};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::store::error::StoreError;
use crate::store::Store;

/// Paths never limited: probes and scrapes must work while a client is over its budget. The
/// ops router is merged outside this layer already; this list keeps them exempt even if a
/// future change mounts them under it.
const EXEMPT: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Applies the global limiter to every request of the services it wraps.
#[derive(Debug, Clone)]
pub struct GlobalRateLimitLayer {
    limiter: Arc<Limiter>,
}

#[derive(Debug, Clone)]
struct Limiter {
    store: Store,
    gcra: Gcra,
    fail: FailPolicy,
    clients: ClientKey,
    /// `RateLimit-Policy`, the same on every response.
    policy: HeaderValue,
    /// Unix second of the last fail-open warning: with the store down every request fails
    /// open, and one line a second says so without flooding the log (the metric counts all).
    warned_at: Arc<AtomicU64>,
}

impl GlobalRateLimitLayer {
    /// Limits each client to `policy` (burst, count per period) in `store`, failing as
    /// `policy.fail` says when the store is down. Clients are told apart by `X-Api-Key`, else by
    /// the peer address; no proxy is trusted.
    pub fn new(store: Store, policy: &GlobalLimit) -> Self {
        let gcra = Gcra::new(policy.max_burst, policy.count_per_period, policy.period);
        let header = format!("\"global\";q={};w={}", gcra.limit, gcra.window_secs());
        Self {
            limiter: Arc::new(Limiter {
                store,
                gcra,
                fail: policy.fail,
                clients: ClientKey::default(),
                policy: HeaderValue::try_from(header)
                    .expect("digits and quotes are a valid header"),
                warned_at: Arc::default(),
            }),
        }
    }

    /// Believes `X-Forwarded-For` from peers in `proxies`.
    ///
    /// Only list proxies you run: a trusted peer can put any client address in that header,
    /// and so give itself any number of budgets. Behind a proxy that is *not* listed, every
    /// client shares the proxy's one budget.
    pub fn with_trusted_proxies(mut self, proxies: Vec<IpNet>) -> Self {
        Arc::make_mut(&mut self.limiter).clients = ClientKey {
            trusted_proxies: proxies,
        };
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
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        let client = match self.clients.client(req.headers(), peer) {
            Ok(client) => client,
            Err(e) => return Ok(e.into_response()),
        };
        match self
            .store
            .ratelimit_throttle(&Bucket::Client(client), &self.gcra, 1)
            .await
        {
            Ok(decision) if decision.allowed => {
                count("allowed");
                let mut response = pass(inner, req).await?;
                self.set_headers(&decision, response.headers_mut());
                Ok(response)
            }
            Ok(decision) => {
                count("limited");
                let retry_after = decision
                    .retry_after_secs()
                    .unwrap_or(self.gcra.window_secs());
                let mut response = ApiError::RateLimited {
                    retry_after: u64::try_from(retry_after).unwrap_or(1),
                }
                .into_response();
                self.set_headers(&decision, response.headers_mut());
                Ok(response)
            }
            Err(e) => self.store_failed(e, inner, req).await,
        }
    }

    async fn store_failed<S>(
        &self,
        e: StoreError,
        inner: S,
        req: Request,
    ) -> Result<Response, Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        match self.fail {
            FailPolicy::Open => {
                count("fail_open");
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                if self.warned_at.swap(now, Ordering::Relaxed) != now {
                    tracing::warn!(error = %e, "global limiter cannot reach the store; serving unlimited (GATEWAY_GLOBAL_FAIL=open)");
                }
                pass(inner, req).await
            }
            FailPolicy::Closed => {
                count("fail_closed");
                // Whatever went wrong, the client sees the store as unavailable: 503, not 500.
                let e = match e {
                    StoreError::Internal(msg) => StoreError::Unavailable(msg),
                    other => other,
                };
                Ok(ApiError::BackendUnavailable(e).into_response())
            }
        }
    }

    /// Both header generations: the IETF draft's structured fields and the `RateLimit-*` trio.
    fn set_headers(&self, d: &Decision, headers: &mut HeaderMap) {
        let reset = d.reset_after_secs();
        let fields = format!("\"global\";r={};t={reset}", d.remaining);
        if let Ok(fields) = HeaderValue::try_from(fields) {
            headers.insert("ratelimit", fields);
        }
        headers.insert("ratelimit-policy", self.policy.clone());
        headers.insert("ratelimit-limit", HeaderValue::from(d.limit));
        headers.insert("ratelimit-remaining", HeaderValue::from(d.remaining));
        headers.insert("ratelimit-reset", HeaderValue::from(reset));
    }
}

fn count(outcome: &'static str) {
    metrics::counter!("gateway_limiter_decisions_total", "outcome" => outcome).increment(1);
}

/// Who a request comes from, for the global limiter.
///
/// `X-Api-Key` when present (1–128 visible ASCII characters, else 400), otherwise the peer IP.
/// Behind a reverse proxy the peer IP is the proxy's: list it in the trusted proxies and the
/// right-most `X-Forwarded-For` hop that is not itself a trusted proxy is used instead.
#[derive(Debug, Clone, Default)]
pub struct ClientKey {
    trusted_proxies: Vec<IpNet>,
}

/// 128-bit SipHash-2-4 with a fixed key: stable across restarts and instances, so every gateway
/// names a client's bucket the same way.
fn digest(bytes: &[u8]) -> u128 {
    use siphasher::sip128::{Hasher128, SipHasher24};
    use std::hash::Hasher;
    let mut h = SipHasher24::new_with_keys(0x6777_2d72_6c67_2d31, 0x6170_692d_6b65_7973);
    h.write(bytes);
    h.finish128().as_u128()
}

impl ClientKey {
    pub fn new(trusted_proxies: Vec<IpNet>) -> Self {
        Self { trusted_proxies }
    }

    /// `k:<digest of the api key>` or `ip:<IPv4 address or IPv6 /64>` (`ip:unknown` when the server was not given
    /// peer addresses, as in a test calling the router directly). API keys are credentials, so
    /// only a 128-bit SipHash-2-4 digest of one reaches a Redis key name: anyone who can list
    /// keys sees budgets, not keys.
    pub fn client(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<String, ApiError> {
        let mut keys = headers.get_all("x-api-key").iter();
        if let Some(key) = keys.next() {
            let bytes = key.as_bytes();
            let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
            if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
                return Err(ApiError::invalid(
                    "X-Api-Key must be one header of 1-128 visible ASCII characters",
                ));
            }
            return Ok(format!("k:{:032x}", digest(bytes)));
        }
        Ok(match peer {
            Some(peer) => format!(
                "ip:{}",
                client_net(self.client_ip(headers, peer.to_canonical()))
            ),
            None => "ip:unknown".to_owned(),
        })
    }

    fn trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// The peer, or, when the peer is a trusted proxy, the right-most hop of `X-Forwarded-For`
    /// that is not a trusted proxy (everything left of it could be forged by the client).
    fn client_ip(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        if !self.trusted(peer) {
            return peer;
        }
        let hops: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            // A hop that is not an address ends the chain of trust at the last proxy.
            let Some(ip) = parse_hop(hop) else { break };
            client = ip;
            if !self.trusted(ip) {
                break;
            }
        }
        client
    }
}

/// The unit a budget belongs to: one IPv4 address, or one IPv6 /64 — a single host is usually
/// handed a whole /64, so per-address IPv6 budgets could be multiplied at will.
fn client_net(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let net = IpNet::new(IpAddr::V6(v6), 64).expect("64 is a valid IPv6 prefix");
            net.trunc().to_string()
        }
    }
}

/// `192.0.2.1`, `2001:db8::1`, and the forms some proxies append with a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use axum::extract::connect_info::MockConnectInfo;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;
    use crate::config::Settings;
    use crate::store::memory::MemoryStore;

    /// A router with one limited route and a probe mounted (wrongly) under the limiter.
    fn router(fail: FailPolicy) -> Router {
        let settings = Settings::defaults();
        let policy = GlobalLimit {
            enabled: true,
            max_burst: 0,
            count_per_period: 1,
            period: 60,
            fail,
        };
        let store = Store::Memory(MemoryStore::new(&settings));
        Router::new()
            .route("/x", get(|| async { "x" }))
            .route("/healthz", get(|| async { "ok" }))
            .layer(GlobalRateLimitLayer::new(store, &policy))
            .layer(MockConnectInfo(SocketAddr::from(([192, 0, 2, 1], 4711))))
    }

    async fn call(app: &Router, path: &str) -> Response {
        let req = Request::get(path).body(axum::body::Body::empty()).unwrap();
        app.clone().oneshot(req).await.unwrap()
    }

    /// Counts `gateway_limiter_decisions_total` by outcome.
    #[derive(Debug, Default)]
    struct Outcomes(std::sync::Mutex<std::collections::HashMap<String, Arc<AtomicU64>>>);

    impl Outcomes {
        fn get(&self, outcome: &str) -> u64 {
            let counts = self.0.lock().unwrap();
            counts.get(outcome).map_or(0, |c| c.load(Ordering::Relaxed))
        }
    }

    impl metrics::Recorder for Outcomes {
        fn describe_counter(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_gauge(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn describe_histogram(
            &self,
            _: metrics::KeyName,
            _: Option<metrics::Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn register_counter(
            &self,
            key: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Counter {
            // Store errors are counted too (by the store layer); only decisions matter here.
            if key.name() != "gateway_limiter_decisions_total" {
                return metrics::Counter::noop();
            }
            let outcome = key
                .labels()
                .find(|l| l.key() == "outcome")
                .map(|l| l.value().to_owned())
                .unwrap_or_default();
            let counter = self.0.lock().unwrap().entry(outcome).or_default().clone();
            metrics::Counter::from_arc(counter)
        }
        fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
            metrics::Gauge::noop()
        }
        fn register_histogram(
            &self,
            _: &metrics::Key,
            _: &metrics::Metadata<'_>,
        ) -> metrics::Histogram {
            metrics::Histogram::noop()
        }
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
            let policy = GlobalLimit {
                enabled: true,
                max_burst: 0,
                count_per_period: 1,
                period: 60,
                fail,
            };
            let app = Router::new()
                .route("/x", get(|| async { "x" }))
                .layer(GlobalRateLimitLayer::new(store.clone(), &policy));
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

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_str(value).unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn behind(proxies: &[&str]) -> ClientKey {
        ClientKey::new(proxies.iter().map(|p| p.parse().unwrap()).collect())
    }

    #[test]
    fn api_key_wins_over_the_address() {
        let k = behind(&[]);
        let h = headers(&[("x-api-key", "abc~!{}"), ("x-forwarded-for", "192.0.2.9")]);
        let client = k.client(&h, Some(ip("10.0.0.1"))).unwrap();
        assert!(client.starts_with("k:") && client.len() == 34, "{client}");
        assert!(
            !client.contains("abc"),
            "the key itself never reaches Redis: {client}"
        );
        assert_eq!(k.client(&h, None).unwrap(), client, "stable");
        let other = headers(&[("x-api-key", "abc~!{")]);
        assert_ne!(k.client(&other, None).unwrap(), client);
        assert_eq!(
            k.client(&HeaderMap::new(), Some(ip("10.0.0.1"))).unwrap(),
            "ip:10.0.0.1"
        );
        assert_eq!(k.client(&HeaderMap::new(), None).unwrap(), "ip:unknown");
    }

    #[test]
    fn ipv6_clients_share_a_budget_per_64() {
        let k = behind(&[]);
        let a = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:2::1")))
            .unwrap();
        let b = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:2:ffff::9")))
            .unwrap();
        let c = k
            .client(&HeaderMap::new(), Some(ip("2001:db8:1:3::1")))
            .unwrap();
        assert_eq!(a, "ip:2001:db8:1:2::/64");
        assert_eq!(a, b, "same /64, same budget");
        assert_ne!(a, c);
        let mapped = k
            .client(&HeaderMap::new(), Some(ip("::ffff:192.0.2.7")))
            .unwrap();
        assert_eq!(mapped, "ip:192.0.2.7", "IPv4-mapped addresses stay IPv4");
    }

    #[test]
    fn malformed_api_keys_are_refused() {
        let k = behind(&[]);
        let long = "a".repeat(129);
        for bad in ["", "a b", "tab\there", long.as_str(), "caf\u{e9}"] {
            let mut h = HeaderMap::new();
            h.insert(
                "x-api-key",
                HeaderValue::from_bytes(bad.as_bytes()).unwrap(),
            );
            let err = k.client(&h, None).unwrap_err();
            assert_eq!(err.code(), "invalid_argument", "{bad:?}");
        }
        let h = headers(&[("x-api-key", "a"), ("x-api-key", "b")]);
        assert!(k.client(&h, None).is_err());
        assert!(
            k.client(&headers(&[("x-api-key", &"a".repeat(128))]), None)
                .is_ok(),
            "128 visible characters are a valid key"
        );
    }

    #[test]
    fn forwarded_for_is_ignored_from_untrusted_peers() {
        let k = behind(&["10.0.0.0/8"]);
        let h = headers(&[("x-forwarded-for", "192.0.2.9")]);
        assert_eq!(
            k.client(&h, Some(ip("198.51.100.7"))).unwrap(),
            "ip:198.51.100.7"
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let k = behind(&["10.0.0.0/8", "127.0.0.1/32"]);
        // The client forged the first hop; 203.0.113.5 is what our first proxy saw.
        let h = headers(&[("x-forwarded-for", "192.0.2.66, 203.0.113.5, 10.1.1.1")]);
        assert_eq!(
            k.client(&h, Some(ip("10.0.0.2"))).unwrap(),
            "ip:203.0.113.5"
        );
        // Hops split over several header lines, with a port and IPv4-mapped IPv6.
        let h = headers(&[
            ("x-forwarded-for", "192.0.2.66"),
            ("x-forwarded-for", "[::ffff:203.0.113.6]:4711, 10.1.1.1"),
        ]);
        assert_eq!(
            k.client(&h, Some(ip("127.0.0.1"))).unwrap(),
            "ip:203.0.113.6"
        );
        // Only trusted hops: the left-most of them.
        let h = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.1.1")]);
        assert_eq!(k.client(&h, Some(ip("10.0.0.2"))).unwrap(), "ip:10.9.9.9");
        // Garbage ends the chain at the last trusted proxy.
        let h = headers(&[("x-forwarded-for", "192.0.2.1, unknown, 10.1.1.1")]);
        assert_eq!(k.client(&h, Some(ip("10.0.0.2"))).unwrap(), "ip:10.1.1.1");
        // No header: the proxy itself.
        assert_eq!(
            k.client(&HeaderMap::new(), Some(ip("10.0.0.2"))).unwrap(),
            "ip:10.0.0.2"
        );
        // IPv6 peers and hops.
        let k = behind(&["2001:db8::/32"]);
        let h = headers(&[("x-forwarded-for", "2001:db9::1")]);
        assert_eq!(
            k.client(&h, Some(ip("2001:db8::5"))).unwrap(),
            "ip:2001:db9::/64",
            "the forwarded IPv6 client, by its /64"
        );
    }
}
