//! A layer that is on or off by configuration, so the whole stack is one `Router::layer` call.
//!
//! Written here because tower's `Either` turns every error into a `BoxError`, which an axum
//! router does not take (its layers must not fail); each separate `Router::layer` call instead
//! boxed the route once more and cloned that box on every request.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::Either;
use tower::{Layer, Service};

/// `Some(layer)` applies it; `None` passes requests straight through.
#[derive(Debug, Clone)]
pub struct Maybe<L>(pub Option<L>);

impl<L: Layer<S>, S> Layer<S> for Maybe<L> {
    type Service = MaybeService<L::Service, S>;

    fn layer(&self, inner: S) -> Self::Service {
        match &self.0 {
            Some(layer) => MaybeService::On(layer.layer(inner)),
            None => MaybeService::Off(inner),
        }
    }
}

#[derive(Debug, Clone)]
pub enum MaybeService<A, B> {
    On(A),
    Off(B),
}

impl<A, B> Service<Request> for MaybeService<A, B>
where
    A: Service<Request, Response = Response, Error = Infallible>,
    B: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<A::Future, B::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        match self {
            Self::On(a) => a.poll_ready(cx),
            Self::Off(b) => b.poll_ready(cx),
        }
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match self {
            Self::On(a) => Either::Left(a.call(req)),
            Self::Off(b) => Either::Right(b.call(req)),
        }
    }
}
