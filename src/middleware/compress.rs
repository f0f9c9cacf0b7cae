//! tower-http's compression, only for requests that ask for it.
//!
//! Written around `CompressionLayer` rather than using it bare: it wraps every response body,
//! and most clients of a JSON API (wrk, curl, many mobile HTTP stacks) send no
//! `Accept-Encoding`, so that work bought nothing for them (measured with bench/ab.py on
//! `GET /healthz`). A request without the header goes straight to the inner service.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::ACCEPT_ENCODING;
use axum::http::Response as HttpResponse;
use axum::response::Response;
use futures::future::{Either, FutureExt, Map};
use tower::{Layer, Service};
use tower_http::compression::predicate::Predicate;
use tower_http::compression::{Compression, CompressionLayer};

#[derive(Clone)]
pub struct AskedCompressionLayer<P> {
    compression: CompressionLayer<P>,
}

impl<P> AskedCompressionLayer<P> {
    pub fn new(compression: CompressionLayer<P>) -> Self {
        Self { compression }
    }
}

impl<S, P: Predicate> Layer<S> for AskedCompressionLayer<P> {
    type Service = AskedCompression<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        AskedCompression {
            inner,
            compression: self.compression.clone(),
        }
    }
}

/// One inner service, wrapped in `Compression` only for a request that asks. Holding a
/// `Compression` of it beside it made the stack hold every layer below twice, and axum clones
/// a route's whole stack for each request (callgrind).
#[derive(Clone)]
pub struct AskedCompression<S, P> {
    inner: S,
    compression: CompressionLayer<P>,
}

type Mapped<F, B> = Map<F, fn(Result<HttpResponse<B>, Infallible>) -> Result<Response, Infallible>>;

type CompressedBody<B> = tower_http::compression::CompressionBody<B>;

impl<S, P, B> Service<Request> for AskedCompression<S, P>
where
    S: Service<Request, Response = HttpResponse<B>, Error = Infallible> + Clone,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError> + Send + Sync,
    P: Predicate,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        Mapped<S::Future, B>,
        Mapped<<Compression<S, P> as Service<Request>>::Future, CompressedBody<B>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.headers().contains_key(ACCEPT_ENCODING) {
            // The service polled ready is the one called; a clone stays behind for the next.
            // (`Compression` adds no readiness of its own.)
            let clone = self.inner.clone();
            let ready = std::mem::replace(&mut self.inner, clone);
            let mut compressed = self.compression.layer(ready);
            Either::Right(compressed.call(req).map(boxed::<CompressedBody<B>>))
        } else {
            Either::Left(self.inner.call(req).map(boxed::<B>))
        }
    }
}

fn boxed<B>(r: Result<HttpResponse<B>, Infallible>) -> Result<Response, Infallible>
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    r.map(|response| response.map(Body::new))
}
