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
//! `X-Forwarded-For` walk) is [`crate::clients::ClientKey`]'s business.

mod answers;
mod batch;
mod common;
#[cfg(test)]
mod outcomes;
mod price;
mod refusals;
mod stacked;
mod stacking;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use tower::{Layer, Service};

use self::answers::{denied, limited, policy_header, set_headers, shadow_refusal};
use self::common::{pass, Limiter};
use self::stacking::Stacked;
use crate::auth::Credentials;
use crate::clients::ClientKey;
use crate::config::GlobalLimit;
use crate::gcra::Gcra;
use crate::middleware::costs::Terms;
use crate::middleware::LimiterNote;
use crate::policies::{Policies, GLOBAL};
use crate::store::Store;

/// Paths never limited: probes and scrapes must work while a client is over its budget. The
/// ops router is merged outside this layer already; this list keeps them exempt even if a
/// future change mounts them under it.
const EXEMPT: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Until [`GlobalRateLimitLayer::with_terms`]: every request costs 1.
static NO_TERMS: Terms = Terms::none();

/// Applies the global limiter to every request of the services it wraps.
#[derive(Debug, Clone)]
pub struct GlobalRateLimitLayer {
    limiter: Arc<Limiter>,
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

impl Limiter {
    /// One request: who pays, which budget, what it costs, then the policies stacked on the
    /// route or the global layer's batched path.
    async fn decide<S>(self: Arc<Self>, inner: S, req: Request) -> Result<Response, Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let who = self.charged(&req);
        let label = who.label();
        // An override of the global layer for this client (docs/policies.md "Overrides and
        // denies"): looked up only while any is in force.
        let overridden = self.overridden(GLOBAL, &who.client);
        if overridden.as_ref().is_some_and(|o| o.stored.deny) && !self.admin(req.headers()) {
            self.decisions.count(GLOBAL, "denied", label);
            return Ok(denied(GLOBAL, who.client.clone()));
        }
        // A client with a budget of its own (or an override's): its GCRA and policy, else the
        // global ones.
        let own = match overridden.as_ref().and_then(|o| o.gcra) {
            Some(gcra) => Some(gcra),
            None => who
                .caller
                .as_ref()
                .and_then(|c| c.limits)
                .map(|l| Gcra::new(l.burst, l.count, l.period)),
        }
        .map(|gcra| (gcra, policy_header(&gcra)));
        let (gcra, policy) = own
            .as_ref()
            .map_or((&self.gcra, &self.policy), |(g, p)| (g, p));
        let (req, quantity) = if who.bad_key.is_some() {
            (req, 1)
        } else {
            match self.price(req, gcra.limit, label).await {
                Ok(priced) => priced,
                Err(refused) => return Ok(refused),
            }
        };
        let (req, inner) = match self
            .stack(&who, (gcra, policy), inner, req, quantity)
            .await?
        {
            Stacked::Answered(response) => return Ok(response),
            Stacked::GlobalOnly(req, inner) => (req, inner),
        };
        let throttled = self.batcher.throttle(&who.client, gcra, quantity).await;
        let (mut response, outcome) = match throttled {
            Ok(decision) if decision.allowed || self.shadow => {
                let outcome = if decision.allowed {
                    "allowed"
                } else {
                    shadow_refusal(label);
                    "would_limit"
                };
                let mut response = match who.bad_key {
                    Some(bad) => bad.error().into_response(),
                    None => pass(inner, req).await?,
                };
                set_headers(&decision, policy, response.headers_mut());
                (response, outcome)
            }
            Ok(decision) => (limited(&decision, gcra, policy), "limited"),
            Err(e) => match who.bad_key {
                Some(bad) => (bad.error().into_response(), "fail_open"),
                None => self.store_failed(e, inner, req).await?,
            },
        };
        self.decisions.count(GLOBAL, outcome, label);
        let client = who.client;
        response
            .extensions_mut()
            .insert(LimiterNote { client, outcome });
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use axum::extract::connect_info::MockConnectInfo;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use std::net::SocketAddr;

    use super::outcomes::Outcomes;
    use super::*;
    use crate::config::FailPolicy;
    use crate::settings::Settings;
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
