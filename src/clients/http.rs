//! The `identify` layer (which client sent a request) and `GET /v1/clients/me`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{Caller, Clients, Limits};
use crate::error::ApiError;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(me))
}

/// Finds the caller's client from `X-Api-Key` (1–128 visible ASCII characters, else 400) and
/// leaves it in the request as a [`Caller`]. A key that matches no configured client is 401:
/// an invented key never buys a fresh limiter budget.
pub async fn identify(
    State(clients): State<Arc<Clients>>,
    mut req: Request,
    next: Next,
) -> Response {
    let mut keys = req.headers().get_all("x-api-key").iter();
    let caller = match keys.next() {
        None => Caller(None),
        Some(key) => {
            let bytes = key.as_bytes();
            let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
            if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
                return ApiError::invalid(
                    "X-Api-Key must be one header of 1-128 visible ASCII characters",
                )
                .into_response();
            }
            match clients.find(bytes) {
                Some(client) => Caller(Some(client)),
                None => {
                    return ApiError::Unauthorized("the X-Api-Key matches no configured client")
                        .into_response()
                }
            }
        }
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// The caller as the gateway sees it.
#[derive(Debug, Serialize, ToSchema)]
struct ClientView {
    /// The configured client the `X-Api-Key` belongs to; null for anonymous callers (limited
    /// per IP address, or per IPv6 /64).
    #[schema(example = "web")]
    client: Option<String>,
    /// The global-limiter budget the caller draws from.
    limits: LimitsView,
}

/// A GCRA budget: `burst + 1` requests at once, `count` more per `period` seconds.
#[derive(Debug, Serialize, ToSchema)]
struct LimitsView {
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
async fn me(State(state): State<AppState>, caller: Option<Extension<Caller>>) -> Json<ClientView> {
    let client = caller.and_then(|Extension(c)| c.0);
    Json(ClientView {
        client: client.as_ref().map(|c| c.id.to_string()),
        limits: state.clients.limits(client.as_deref()).into(),
    })
}
