//! The `identify` layer (which client sent a request), the caller's identity ([`ClientKey`])
//! and the extractors that scope a request to its caller: its namespace and its
//! `Idempotency-Key`.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use futures::future::Either;
use tower::{Layer, Service};

mod idempotency;
mod key;

pub use idempotency::IdempotencyKey;
pub use key::ClientKey;

use super::{Caller, Clients};
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::types::Name;

/// Finds the caller's client from `X-Api-Key` (1–128 visible ASCII characters, else 400) and
/// leaves it in the request as a [`Caller`]. A key that matches no configured client is 401:
/// an invented key never buys a fresh limiter budget.
///
/// With the global limiter inside this layer, a refused key is not answered here: the request
/// goes on with a [`BadKey`] mark and no client, so the limiter charges its address first and
/// then answers the 401 — failed credentials count like any request (docs/clients.md
/// "Who may do what"), and a guesser is soon answered 429.
///
/// A tower layer rather than an axum `from_fn`, which boxed every request's future and cloned
/// the boxed inner route once more.
#[derive(Debug, Clone)]
pub struct IdentifyLayer {
    clients: Arc<Clients>,
    address: ClientKey,
    anonymous_backend_routes: bool,
    /// A global limiter runs inside: leave refusals to it.
    limited: bool,
}

impl IdentifyLayer {
    /// `proxies`: whose `X-Forwarded-For` is believed; `limited`: whether the global limiter
    /// runs inside this layer.
    pub fn new(
        clients: Arc<Clients>,
        proxies: Vec<ipnet::IpNet>,
        anonymous_backend_routes: bool,
        limited: bool,
    ) -> Self {
        Self {
            clients,
            address: ClientKey::new(proxies),
            anonymous_backend_routes,
            limited,
        }
    }
}

impl<S> Layer<S> for IdentifyLayer {
    type Service = Identify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Identify {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Identify<S> {
    inner: S,
    layer: IdentifyLayer,
}

/// A request whose `X-Api-Key` was refused, marked for the global limiter, which charges the
/// caller's address and then answers [`BadKey::error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadKey {
    /// Not one header of 1–128 visible ASCII characters: 400.
    Malformed,
    /// No configured client has it: 401.
    Unknown,
}

impl BadKey {
    pub fn error(self) -> ApiError {
        match self {
            Self::Malformed => {
                ApiError::invalid("X-Api-Key must be one header of 1-128 visible ASCII characters")
            }
            Self::Unknown => ApiError::Unauthorized("the X-Api-Key matches no configured client"),
        }
    }
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
        let layer = &self.layer;
        let found = client(&layer.clients, &req);
        if let Err(bad) = found {
            if !layer.limited {
                return Either::Left(ready(Ok(bad.error().into_response())));
            }
            req.extensions_mut().insert(bad);
        }
        let client = found.ok().flatten();
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        let identity = layer.address.client(client.as_deref(), req.headers(), peer);
        req.extensions_mut().insert(Caller {
            client,
            identity,
            clients_configured: layer.clients.configured(),
            anonymous_backend_routes: layer.anonymous_backend_routes,
        });
        Either::Right(self.inner.call(req))
    }
}

fn client(clients: &Clients, req: &Request) -> Result<Option<Arc<super::Client>>, BadKey> {
    let mut keys = req.headers().get_all("x-api-key").iter();
    let Some(key) = keys.next() else {
        return Ok(None);
    };
    let bytes = key.as_bytes();
    let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
    if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
        return Err(BadKey::Malformed);
    }
    clients.find(bytes).map(Some).ok_or(BadKey::Unknown)
}

/// The namespace of the caller's back-end resources — rate-limit keys, locks, queues
/// (docs/clients.md "Who may do what"): with a clients file, the API client's, or an anonymous
/// caller's address when `GATEWAY_ANONYMOUS_BACKEND_ROUTES=on` (else 401); without one, a single
/// namespace shared by every caller, the trusted back end's.
#[derive(Debug, Clone)]
pub struct Namespace(Option<String>);

impl Namespace {
    /// The name the store keys `name` by for this caller.
    pub fn scope(&self, name: &Name) -> Name {
        match &self.0 {
            Some(namespace) => Name::scoped(namespace, name),
            None => name.clone(),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Namespace {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let Some(caller) = parts.extensions.get::<Caller>() else {
            // Only the API routes are identified, and only they take this.
            return Ok(Self(None));
        };
        if !caller.clients_configured {
            return Ok(Self(None));
        }
        if caller.client.is_none() && !caller.anonymous_backend_routes {
            return Err(ApiError::Unauthorized(
                "rate-limit checks, locks and queues need an API key (X-Api-Key)",
            ));
        }
        Ok(Self(Some(caller.identity.clone())))
    }
}

/// A back-end resource named by the route's one path segment: the name as the caller gave it
/// (for answers) and as the store keys it for this caller ([`Namespace::scope`]). The caller
/// is checked before the path, as when a handler takes both.
#[derive(Debug)]
pub struct ScopedName {
    pub name: Name,
    pub scoped: Name,
}

impl<S: Send + Sync> FromRequestParts<S> for ScopedName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let namespace = Namespace::from_request_parts(parts, state).await?;
        let ApiPath(name) = ApiPath::<Name>::from_request_parts(parts, state).await?;
        let scoped = namespace.scope(&name);
        Ok(Self { name, scoped })
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> = Some((
        "clients",
        "API clients: who the caller is and its limiter budget",
    ));
}
