//! The request timeout: `GATEWAY_REQUEST_TIMEOUT_MS` for every request, plus the longest wait
//! a long-poll route declares in its terms ([`Terms::waits`]), so a 20 s claim is never cut
//! to the 10 s default.
//! Past the budget the answer is `408 request_timeout` (with `Connection: close`) when the
//! request was waiting for the rest of its body — the client stalled — and a bare 503,
//! rendered as a problem by the outer layer, when the server was the slow one.
//!
//! Each request is one [`stall`] scope: once a store call of it timed out, wherever in the
//! stack (the global limiter's charge, the handler's), its later calls are not sent, and it
//! answers its 503 about one store timeout after the store stalled, not one per layer.
//!
//! Also the request-target limit ([`MAX_TARGET_BYTES`], `414 uri_too_long`), checked here to
//! cost no service of its own: hyper's own bound on a target is 64 KiB.
//!
//! Written here rather than with tower-http's `TimeoutLayer`, which takes one duration for
//! every route and cannot tell a stalled client from a slow server, and as a service rather
//! than an axum `from_fn`, which boxed every request's future and cloned the boxed inner route
//! once more.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{MatchedPath, Request};
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::{self, FutureExt, Join, Map, Ready};
use hyper::body::{Frame, SizeHint};
use tokio::time::error::Elapsed;
use tower::{Layer, Service};

use super::costs::Terms;
use crate::error::{set_retry_after, ApiError, UNAVAILABLE_RETRY};
use crate::store::stall;

/// The longest request target (path and query) taken: past it, `414`. The longest the API
/// needs is a UV union's query, 100 page names of up to 128 bytes (~13 KiB).
pub const MAX_TARGET_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy)]
pub struct RequestTimeoutLayer {
    pub budget: Duration,
    /// The routes' own terms: which of them wait on purpose, and how long.
    pub terms: &'static Terms,
}

impl<S> Layer<S> for RequestTimeoutLayer {
    type Service = RequestTimeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestTimeout {
            inner,
            budget: self.budget,
            terms: self.terms,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    budget: Duration,
    terms: &'static Terms,
}

type Timed = Result<Result<Response, Infallible>, Elapsed>;

/// Whether the request's body was being waited for (`None`: the request has no body).
type Waiting = Option<Arc<AtomicBool>>;

fn answer((timed, waiting): (Timed, Waiting)) -> Result<Response, Infallible> {
    let stalled = match timed {
        Ok(answered) => return answered,
        Err(_) => waiting.is_some_and(|w| w.load(Ordering::Relaxed)),
    };
    if !stalled {
        // As every other 503 says (`ApiError::BackendUnavailable`), rather than leave a client
        // to guess or retry at once.
        let mut response = StatusCode::SERVICE_UNAVAILABLE.into_response();
        set_retry_after(response.headers_mut(), UNAVAILABLE_RETRY);
        return Ok(response);
    }
    let mut response =
        ApiError::RequestTimeout("the request body did not arrive in time".to_owned())
            .into_response();
    // The rest of the body may still come: it must not be read as the next request.
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    Ok(response)
}

/// The timed inner future, joined with what tells a stalled body from a slow server: a `Join`
/// with a ready value instead of a boxed future, whose type could not be named here.
type Answer<F> = Map<
    Join<tokio::time::Timeout<stall::Scoped<F>>, Ready<Waiting>>,
    fn((Timed, Waiting)) -> Result<Response, Infallible>,
>;

impl<S> Service<Request> for RequestTimeout<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = future::Either<Ready<Result<Response, Infallible>>, Answer<S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        if target > MAX_TARGET_BYTES {
            return future::Either::Left(future::ready(Ok(ApiError::UriTooLong(format!(
                "the request target is {target} bytes, over the limit of {MAX_TARGET_BYTES}"
            ))
            .into_response())));
        }
        let wait = match req.extensions().get::<MatchedPath>() {
            Some(route) => self.terms.waits(req.method().as_str(), route.as_str()),
            None => Duration::ZERO,
        };
        // A request without a body (most) is not wrapped: no allocation for it.
        let (req, waiting) = if req.body().is_end_stream() {
            (req, None)
        } else {
            let waiting = Arc::new(AtomicBool::new(false));
            let watched = waiting.clone();
            let req = req.map(|inner| {
                Body::new(Arriving {
                    inner,
                    waiting: watched,
                })
            });
            (req, Some(waiting))
        };
        let timed = tokio::time::timeout(self.budget + wait, stall::scope(self.inner.call(req)));
        future::Either::Right(future::join(timed, future::ready(waiting)).map(answer as fn(_) -> _))
    }
}

/// A request body that notes whether its reader is waiting for the client: its last poll
/// found no data.
#[derive(Debug)]
struct Arriving {
    inner: Body,
    waiting: Arc<AtomicBool>,
}

impl HttpBody for Arriving {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        self.waiting.store(polled.is_pending(), Ordering::Relaxed);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget ran out while the server worked (no body being waited for).
    async fn slow_server() -> Response {
        let elapsed = tokio::time::timeout(Duration::ZERO, std::future::pending::<()>())
            .await
            .unwrap_err();
        answer((Err(elapsed), None)).unwrap()
    }

    #[tokio::test]
    async fn a_slow_server_answers_503_with_retry_after() {
        let response = slow_server().await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[axum::http::header::RETRY_AFTER], "1");
    }
}
