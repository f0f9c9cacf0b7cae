//! The limiter's state and the steps both of its paths share: who pays, the overrides and
//! denies in force, and what a request gets when the store cannot decide.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use tower::Service;

use super::answers::{Decisions, ANONYMOUS};
use super::batch;
use crate::auth::Credentials;
use crate::clients::ClientKey;
use crate::clients::{BadKey, Caller, Client};
use crate::config::FailPolicy;
use crate::error::ApiError;
use crate::gcra::Gcra;
use crate::middleware::costs::Terms;
use crate::policies::overrides::Override;
use crate::policies::Policies;
use crate::store::error::StoreError;
use crate::store::Store;

/// One limiter layer's budget, settings and shared counters; cloned only while the layer is
/// being built.
#[derive(Debug, Clone)]
pub(super) struct Limiter {
    pub(super) gcra: Gcra,
    pub(super) fail: FailPolicy,
    /// Refusals are counted and logged as `would_limit`, and the request is served.
    pub(super) shadow: bool,
    pub(super) clients: ClientKey,
    /// What each route costs.
    pub(super) terms: &'static Terms,
    /// The largest body read to price a request that does not say its length.
    pub(super) body_limit: usize,
    /// `RateLimit-Policy`, the same on every response.
    pub(super) policy: HeaderValue,
    /// Unix second of the last fail-open warning: with the store down every request fails
    /// open, and one line a second says so without flooding the log (the metric counts all).
    pub(super) warned_at: Arc<AtomicU64>,
    /// The store, reached through batches of a busy client's concurrent steps ([`batch`]).
    pub(super) batcher: Arc<batch::Batcher>,
    pub(super) decisions: Arc<Decisions>,
    /// The limit policies stacked on this layer (docs/policies.md); none by default.
    pub(super) policies: Option<Arc<Policies>>,
    /// End-user JWTs, which name the user of a `by = "user"` policy.
    pub(super) credentials: Option<Arc<Credentials>>,
    /// The store, for the calls that decide several buckets at once.
    pub(super) store: Store,
}

/// Who a request is charged to, as the `identify` layer left it.
pub(super) struct Charged {
    /// The limiter's key: `c:<client id>` or the address.
    pub(super) client: String,
    /// The configured API client, if the request named one.
    pub(super) caller: Option<Arc<Client>>,
    /// A refused `X-Api-Key`: charged to the address like any request, then answered with its
    /// 401 or 400.
    pub(super) bad_key: Option<BadKey>,
}

impl Charged {
    /// The metrics' `client` label ([`ANONYMOUS`] unless configured).
    pub(super) fn label(&self) -> &str {
        self.caller.as_ref().map_or(ANONYMOUS, |c| c.id.as_str())
    }
}

impl Limiter {
    /// Who the request is charged to.
    pub(super) fn charged(&self, req: &Request) -> Charged {
        let caller = req.extensions().get::<Caller>();
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
        Charged {
            client,
            caller: caller.and_then(|c| c.client.clone()),
            bad_key: req.extensions().get::<BadKey>().copied(),
        }
    }

    /// The override in force of `policy` for the identity `key`, if any.
    pub(super) fn overridden(&self, policy: &str, key: &str) -> Option<Arc<Override>> {
        let overrides = self.policies.as_ref()?.overrides();
        if overrides.is_empty() {
            return None;
        }
        overrides.find(policy, key)
    }

    /// Whether the request carries the admin token: denies never lock the operator out.
    pub(super) fn admin(&self, headers: &HeaderMap) -> bool {
        self.credentials
            .as_ref()
            .is_some_and(|c| c.is_admin(headers))
    }

    pub(super) async fn store_failed<S>(
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

pub(super) async fn pass<S>(mut inner: S, req: Request) -> Result<Response, Infallible>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    inner.call(req).await
}
