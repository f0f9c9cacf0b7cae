//! The `identify` layer (which client sent a request) and `GET /v1/clients/me`.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::future::Either;
use serde::Serialize;
use tower::{Layer, Service};
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
///
/// A tower layer rather than an axum `from_fn`, which boxed every request's future and cloned
/// the boxed inner route once more (issue 19).
#[derive(Debug, Clone)]
pub struct IdentifyLayer(pub Arc<Clients>);

impl<S> Layer<S> for IdentifyLayer {
    type Service = Identify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Identify {
            inner,
            clients: self.0.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Identify<S> {
    inner: S,
    clients: Arc<Clients>,
}

impl<S> Service<Request> for Identify<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        match caller(&self.clients, &req) {
            Ok(caller) => {
                req.extensions_mut().insert(caller);
                Either::Right(self.inner.call(req))
            }
            Err(refused) => Either::Left(ready(Ok(refused.into_response()))),
        }
    }
}

fn caller(clients: &Clients, req: &Request) -> Result<Caller, ApiError> {
    let mut keys = req.headers().get_all("x-api-key").iter();
    let Some(key) = keys.next() else {
        return Ok(Caller(None));
    };
    let bytes = key.as_bytes();
    let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
    if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
        return Err(ApiError::invalid(
            "X-Api-Key must be one header of 1-128 visible ASCII characters",
        ));
    }
    match clients.find(bytes) {
        Some(client) => Ok(Caller(Some(client))),
        None => Err(ApiError::Unauthorized(
            "the X-Api-Key matches no configured client",
        )),
    }
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
