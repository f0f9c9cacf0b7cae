//! tower-http's compression, only for requests that ask for it.
//!
//! Written around `CompressionLayer` rather than using it bare: it wraps every response body,
//! and most clients of a JSON API (wrk, curl, many mobile HTTP stacks) send no
//! `Accept-Encoding`, so that work bought nothing for them (measured with bench/ab.py on
//! `GET /healthz`; issue 19). A request without the header goes straight to the inner service.

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

impl<S: Clone, P: Predicate> Layer<S> for AskedCompressionLayer<P> {
    type Service = AskedCompression<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        AskedCompression {
            compressed: self.compression.layer(inner.clone()),
            plain: inner,
        }
    }
}

#[derive(Clone)]
pub struct AskedCompression<S, P> {
    plain: S,
    compressed: Compression<S, P>,
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
        // Both wrap the same kind of inner service (axum's routes, always ready).
        match self.plain.poll_ready(cx) {
            Poll::Ready(Ok(())) => self.compressed.poll_ready(cx),
            other => other,
        }
    }

    fn call(&mut self, req: Request) -> Self::Future {
        if req.headers().contains_key(ACCEPT_ENCODING) {
            Either::Right(self.compressed.call(req).map(boxed::<CompressedBody<B>>))
        } else {
            Either::Left(self.plain.call(req).map(boxed::<B>))
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
