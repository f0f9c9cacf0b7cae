//! The request timeout: `GATEWAY_REQUEST_TIMEOUT_MS` for every request, plus the longest
//! allowed wait on the long-poll routes, so a 20 s claim is never cut to the 10 s default.
//!
//! Written here rather than with tower-http's `TimeoutLayer`, which takes one duration for
//! every route, and as a service rather than an axum `from_fn`, which boxed every request's
//! future and cloned the boxed inner route once more (issue 19). Past the budget the answer is
//! a bare 503, rendered as a problem by the outer layer.

use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{MatchedPath, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures::future::{FutureExt, Map};
use tokio::time::error::Elapsed;
use tower::{Layer, Service};

/// Routes that wait server-side on purpose, with the longest wait their body may ask for
/// (API.md: a claim's `wait_ms` ≤ 20,000, a lock acquisition's ≤ 10,000).
const LONG_POLLS: [(&str, &str, Duration); 2] = [
    ("POST", "/v1/queues/{queue}/claim", Duration::from_secs(20)),
    ("POST", "/v1/locks/{name}", Duration::from_secs(10)),
];

#[derive(Debug, Clone, Copy)]
pub struct RequestTimeoutLayer {
    pub budget: Duration,
}

impl<S> Layer<S> for RequestTimeoutLayer {
    type Service = RequestTimeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestTimeout {
            inner,
            budget: self.budget,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    budget: Duration,
}

type Timed = Result<Result<Response, Infallible>, Elapsed>;

fn answer(timed: Timed) -> Result<Response, Infallible> {
    timed.unwrap_or_else(|_| Ok(StatusCode::SERVICE_UNAVAILABLE.into_response()))
}

impl<S> Service<Request> for RequestTimeout<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Map<tokio::time::Timeout<S::Future>, fn(Timed) -> Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let wait = LONG_POLLS
            .iter()
            .find(|(m, r, _)| req.method().as_str() == *m && route == Some(*r))
            .map_or(Duration::ZERO, |(.., wait)| *wait);
        tokio::time::timeout(self.budget + wait, self.inner.call(req)).map(answer as fn(_) -> _)
    }
}
