//! The API's answer while the store has not been reached since start-up
//! ([`crate::startup`]): 503 `backend_unavailable` with `Retry-After` and the reason, at once,
//! before the limiter charges anyone or a handler tries a store that is not there. Only the
//! API's operations: the documentation it is served with (Swagger UI, `/openapi.json`) and
//! the 404 of an unknown path need no store. Once the store has answered, one atomic load per
//! request.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use futures::future::{self, Either, Ready};
use tower::{Layer, Service};

use crate::error::ApiError;
use crate::startup::Gate;

/// The route templates of the API's operations (as axum's `MatchedPath` has them).
pub type Operations = Arc<HashSet<String>>;

#[derive(Debug, Clone)]
pub struct StartupGateLayer {
    pub gate: Gate,
    pub operations: Operations,
}

impl<S> Layer<S> for StartupGateLayer {
    type Service = StartupGate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        StartupGate {
            inner,
            gate: self.gate.clone(),
            operations: self.operations.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct StartupGate<S> {
    inner: S,
    gate: Gate,
    operations: Operations,
}

impl<S> Service<Request> for StartupGate<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let refused = self.gate.check().err().filter(|_| {
            req.extensions()
                .get::<MatchedPath>()
                .is_some_and(|route| self.operations.contains(route.as_str()))
        });
        match refused {
            None => Either::Right(self.inner.call(req)),
            Some(e) => Either::Left(future::ready(Ok(ApiError::from(e).into_response()))),
        }
    }
}
