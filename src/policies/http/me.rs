//! `GET /v1/clients/me`: who the gateway thinks the caller is, and the limits it is held to.
//! Here rather than with the clients because what it shows is the limiter's view: the
//! caller's budget and the policies stacked on it.

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;

use super::PoliciesState;
use super::PolicyRule;
use crate::clients::{Caller, Limits};
use crate::extract::NoQuery;

/// The caller as the gateway sees it.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ClientView {
    /// The configured client the `X-Api-Key` belongs to; null for anonymous callers (limited
    /// per IP address, or per IPv6 /64).
    #[schema(example = "web")]
    client: Option<String>,
    /// The global-limiter budget the caller draws from.
    limits: LimitsView,
    /// The limit policies stacked on it (docs/policies.md), each on its operations: the
    /// caller is counted by those whose identity its requests carry (a `user` policy counts
    /// requests that act for a user, a `header:<Name>` policy requests with that header).
    policies: Vec<PolicyRule>,
}

/// A GCRA budget: `burst + 1` requests at once, `count` more per `period` seconds.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct LimitsView {
    burst: u64,
    count: u64,
    period: u64,
}

impl From<Limits> for LimitsView {
    fn from(l: Limits) -> Self {
        Self {
            burst: l.burst,
            count: l.count,
            period: l.period,
        }
    }
}

/// Who the gateway thinks the caller is, and its limiter budget.
#[utoipa::path(
    get,
    path = "/v1/clients/me",
    operation_id = "clientsMe",
    tag = "clients",
    params(("X-Api-Key" = Option<String>, Header, description = "A configured client's key; omit to be anonymous")),
    responses(
        (status = 200, body = ClientView),
        (status = 400, description = "`invalid_argument`: a malformed X-Api-Key", body = crate::error::Problem, content_type = "application/problem+json"),
        (status = 401, description = "`unauthorized`: the X-Api-Key matches no configured client", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
pub(super) async fn me(
    State(state): State<PoliciesState>,
    caller: Option<Extension<Caller>>,
    _: NoQuery,
) -> Json<ClientView> {
    let client = caller.and_then(|Extension(c)| c.client);
    let policies = state
        .policies
        .current()
        .policies
        .iter()
        .map(|p| PolicyRule::from(&**p))
        .collect();
    Json(ClientView {
        client: client.as_ref().map(|c| c.id.to_string()),
        limits: state.clients.limits(client.as_deref()).into(),
        policies,
    })
}
