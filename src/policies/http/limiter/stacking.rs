//! The limiter's path for a request that limit policies apply to (docs/policies.md): every
//! limit stacked on the route decided with the global layer in one store call.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::response::Response;
use tower::Service;

use super::answers::{denied, limited, policy_header, shadow_refusal};
use super::common::{pass, Charged, Limiter};
use super::stacked;
use crate::gcra::Gcra;
use crate::middleware::LimiterNote;
use crate::policies::{Policy, GLOBAL};

/// Where the policies sent a request: decided with them, or on to the global layer alone
/// (with the inner service, which only one of the two paths calls).
pub(super) enum Stacked<S> {
    Answered(Response),
    GlobalOnly(Request, S),
}

impl Limiter {
    /// The limit policies on the request's route, decided with the global layer in one store
    /// call when any of them counts the request.
    pub(super) async fn stack<S>(
        &self,
        who: &Charged,
        (gcra, policy): (&Gcra, &HeaderValue),
        inner: S,
        req: Request,
        quantity: u64,
    ) -> Result<Stacked<S>, Infallible>
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let Some(policies) = self.policies.as_ref().filter(|_| who.bad_key.is_none()) else {
            return Ok(Stacked::GlobalOnly(req, inner));
        };
        let table = policies.current();
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map_or("", MatchedPath::as_str);
        let applying = table.applying(req.method().as_str(), route);
        if applying.is_empty() {
            return Ok(Stacked::GlobalOnly(req, inner));
        }
        let identities = stacked::Identities {
            client: &who.client,
            clients: &self.clients,
            credentials: self.credentials.as_deref(),
            body_limit: self.body_limit,
        };
        let (req, ids) = match identities.of(applying, req).await {
            Ok(found) => found,
            Err(refused) => return Ok(Stacked::Answered(refused)),
        };
        // A request none of them counts (no user, no such header) costs what a request no
        // policy applies to does: the global layer's batched path.
        if !ids.iter().any(Option::is_some) {
            return Ok(Stacked::GlobalOnly(req, inner));
        }
        let global = stacked::Global {
            client: &who.client,
            gcra,
            header_item: policy.to_str().unwrap_or_default(),
            shadow: self.shadow,
        };
        let label = who.label();
        self.decide_stacked(inner, req, &global, applying, &ids, quantity, label)
            .await
            .map(Stacked::Answered)
    }

    /// A request that limit policies apply to: every limit decided in one store call
    /// ([`stacked`]), the request served only when each enforced one admits it.
    #[allow(clippy::too_many_arguments)]
    async fn decide_stacked<S>(
        &self,
        inner: S,
        req: Request,
        global: &stacked::Global<'_>,
        applying: &[Arc<Policy>],
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
        let known = (!global.shadow)
            .then(|| {
                self.batcher
                    .known_refusal(global.client, global.gcra, quantity)
            })
            .flatten();
        if let Some(refused) = known {
            let header = HeaderValue::from_str(global.header_item)
                .unwrap_or_else(|_| policy_header(global.gcra));
            let mut response = limited(&refused, global.gcra, &header);
            self.decisions.count(GLOBAL, "limited", label);
            let outcome = "limited";
            response
                .extensions_mut()
                .insert(LimiterNote { client, outcome });
            return Ok(response);
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
                self.count_stacked(&decided, refused.is_some(), label);
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

    /// Counts each stacked limit's decision; when one refuses, the limits that admitted the
    /// request spent nothing and are not counted.
    fn count_stacked(&self, decided: &[stacked::Decided<'_>], refused: bool, label: &str) {
        for d in decided {
            let outcome = match (d.decision.allowed, d.shadow, refused) {
                (true, _, false) => "allowed",
                (false, true, false) => "would_limit",
                (false, false, _) => "limited",
                (_, _, true) => continue,
            };
            if outcome == "would_limit" {
                shadow_refusal(label);
            }
            self.decisions.count(d.name, outcome, label);
        }
    }
}
