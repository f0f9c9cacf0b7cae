//! Requests that limit policies apply to (docs/policies.md): the global layer's bucket and each
//! applying policy's bucket for the request's identity, decided together by one store call
//! ([`BudgetStore::budget_spend_all`]), all or nothing, so a request refused by one limit spends
//! nothing of the others. Requests no policy applies to never come here: they keep the global
//! layer's batched path, at its cost.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, RawPathParams, Request};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};

use crate::auth::Credentials;
use crate::clients::ClientKey;
use crate::error::ApiError;
use crate::gcra::{Decision, Gcra};
use crate::policies::budget::{BudgetStore, Step};
use crate::policies::overrides::Override;
use crate::policies::{By, Policy, GLOBAL};
use crate::store::error::StoreError;
use crate::store::Store;
use crate::types::UserId;

/// The identity `policy` counts `req` by, or `None` when the request has none (no user, no
/// such header): then the policy does not count it. `Err`: the body could not be read (its
/// answer). Identities are what an override names, with a kind prefix so that two kinds never
/// share a bucket: `c:<client>`/`ip:<address>` as the global layer's, `u:<user id>`,
/// `h:<SHA-256 of the value>` (a header's value may hold anything; a digest is a safe key),
/// `op:<policy>` for the operation as a whole.
pub(super) struct Identities<'a> {
    pub client: &'a str,
    pub clients: &'a ClientKey,
    pub credentials: Option<&'a Credentials>,
    pub body_limit: usize,
}

impl Identities<'_> {
    pub async fn of(
        &self,
        policies: &[Arc<Policy>],
        req: Request,
    ) -> Result<(Request, Vec<Option<String>>), Response> {
        let mut user = None;
        let mut req = req;
        if policies.iter().any(|p| p.by == By::User) {
            let (found, back) = self.user(req).await?;
            user = found;
            req = back;
        }
        let ids = policies
            .iter()
            .map(|p| match &p.by {
                By::Client => Some(self.client.to_owned()),
                By::Address => {
                    let peer = req
                        .extensions()
                        .get::<ConnectInfo<SocketAddr>>()
                        .map(|ConnectInfo(addr)| addr.ip());
                    Some(self.clients.client(None, req.headers(), peer))
                }
                By::User => user.clone(),
                By::Header(name) => header_identity(req.headers(), name),
                By::Operation => Some(format!("op:{}", p.name)),
            })
            .collect();
        Ok((req, ids))
    }

    /// The user a request acts for: with end-user JWTs configured, a valid token's `sub` (none
    /// without one); without them the `user_id` of its path, else of its JSON body.
    async fn user(&self, req: Request) -> Result<(Option<String>, Request), Response> {
        let tokens = self.credentials.and_then(|c| c.user_tokens.as_ref());
        if let Some(tokens) = tokens {
            let sub = crate::auth::bearer(req.headers()).and_then(|token| tokens.subject(token));
            // With tokens configured only a verified `sub` names a user: a `user_id` in the
            // path or body of a request without one would let anyone spend that user's
            // budget (the handler refuses such a request, after the limiter has charged it).
            return Ok((sub.map(|sub| format!("u:{sub}")), req));
        }
        let (mut parts, body) = req.into_parts();
        let in_path = {
            use axum::extract::FromRequestParts;
            RawPathParams::from_request_parts(&mut parts, &())
                .await
                .ok()
                .and_then(|params| {
                    params
                        .iter()
                        .find(|(name, _)| *name == "user_id")
                        .and_then(|(_, value)| UserId::parse(value).ok())
                })
        };
        if let Some(user) = in_path {
            return Ok((
                Some(format!("u:{}", user.0)),
                Request::from_parts(parts, body),
            ));
        }
        if !matches!(parts.method, Method::POST | Method::PUT | Method::PATCH) {
            return Ok((None, Request::from_parts(parts, body)));
        }
        let bytes = match axum::body::to_bytes(body, self.body_limit).await {
            Ok(bytes) => bytes,
            Err(e) => return Err(super::price::body_refused(e, "", false, self.body_limit)),
        };
        #[derive(serde::Deserialize)]
        struct Body {
            user_id: Option<UserId>,
        }
        let user = serde_json::from_slice::<Body>(&bytes)
            .ok()
            .and_then(|b| b.user_id)
            .map(|u| format!("u:{}", u.0));
        Ok((
            user,
            Request::from_parts(parts, axum::body::Body::from(bytes)),
        ))
    }
}

fn header_identity(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?;
    Some(format!("h:{}", crate::types::sha256_hex(value.as_bytes())))
}

/// What the global layer brings to a stacked decision.
pub(super) struct Global<'a> {
    pub client: &'a str,
    pub gcra: &'a Gcra,
    pub header_item: &'a str,
    pub shadow: bool,
}

/// One limit of the request and what the store decided for it.
pub(super) struct Decided<'a> {
    pub name: &'a str,
    pub header_item: &'a str,
    pub shadow: bool,
    /// Seconds its whole budget takes to refill (the `Retry-After` of a request that can never
    /// fit it).
    pub window_secs: i64,
    pub decision: Decision,
}

/// A policy that counts the request, as it applies to its identity (an override's budget
/// replaces the file's).
pub(super) struct Limit<'a> {
    pub name: &'a str,
    pub identity: &'a str,
    pub gcra: Gcra,
    pub header_item: String,
    pub shadow: bool,
}

impl<'a> Limit<'a> {
    pub fn of(policy: &'a Policy, identity: &'a str, overridden: Option<&Override>) -> Self {
        let (gcra, header_item) = match overridden.and_then(|o| o.gcra.map(|g| (g, o))) {
            Some((gcra, o)) => (gcra, o.header_item.clone()),
            None => (policy.gcra, policy.header_item.clone()),
        };
        Self {
            name: policy.name.as_str(),
            identity,
            gcra,
            header_item,
            shadow: policy.shadow,
        }
    }
}

/// Decides every applying limit in one store call.
pub(super) async fn decide<'a>(
    store: &Store,
    global: &Global<'a>,
    limits: &'a [Limit<'a>],
    quantity: u64,
) -> Result<Vec<Decided<'a>>, StoreError> {
    let mut steps = Vec::with_capacity(1 + limits.len());
    steps.push(Step {
        identity: global.client,
        policy: None,
        gcra: global.gcra,
        quantity,
        enforce: !global.shadow,
    });
    for limit in limits {
        steps.push(Step {
            identity: limit.identity,
            policy: Some(limit.name),
            gcra: &limit.gcra,
            quantity,
            enforce: !limit.shadow,
        });
    }
    let decisions = store.budget_spend_all(&steps).await?;
    let names = std::iter::once((GLOBAL, global.header_item, global.shadow, global.gcra)).chain(
        limits
            .iter()
            .map(|l| (l.name, l.header_item.as_str(), l.shadow, &l.gcra)),
    );
    Ok(names
        .zip(decisions)
        .map(|((name, header_item, shadow, gcra), decision)| Decided {
            name,
            header_item,
            shadow,
            window_secs: gcra.window_secs(),
            decision,
        })
        .collect())
}

/// The enforced limit that refused the request (the one whose refusal lasts longest), if any.
pub(super) fn refusing<'d, 'a>(decided: &'d [Decided<'a>]) -> Option<&'d Decided<'a>> {
    decided
        .iter()
        .filter(|d| !d.decision.allowed && !d.shadow)
        .max_by_key(|d| d.decision.retry_after.unwrap_or(i128::MAX))
}

/// The limit closest to refusing: the refusing one, else the one with the fewest units left.
fn closest<'d, 'a>(decided: &'d [Decided<'a>]) -> Option<&'d Decided<'a>> {
    refusing(decided).or_else(|| decided.iter().min_by_key(|d| d.decision.remaining))
}

/// `RateLimit-Policy` lists every limit that applied; `RateLimit` and the `RateLimit-*` trio
/// describe the one closest to refusing.
pub(super) fn set_headers(decided: &[Decided<'_>], headers: &mut HeaderMap) {
    let Some(closest) = closest(decided) else {
        return;
    };
    let items: Vec<&str> = decided.iter().map(|d| d.header_item).collect();
    if let Ok(policy) = HeaderValue::try_from(items.join(", ")) {
        super::answers::set_headers_named(closest.name, &closest.decision, &policy, headers);
    }
}

/// The 429 of a request `refused` by: `Retry-After` its wait, the problem names it.
pub(super) fn refusal(refused: &Decided<'_>) -> Response {
    let retry_after = refused
        .decision
        .retry_after_secs()
        .unwrap_or(refused.window_secs);
    ApiError::RateLimited {
        retry_after: u64::try_from(retry_after).unwrap_or(1),
        policy: refused.name.to_owned(),
    }
    .into_response()
}
