//! What a request costs the limiter, known before any store work (docs/ratelimit.md "Route
//! costs").

use axum::extract::{MatchedPath, Request};
use axum::http::header::CONTENT_LENGTH;
use axum::http::HeaderName;
use axum::response::{IntoResponse, Response};

use super::common::Limiter;
use crate::error::ApiError;
use crate::middleware::costs::{Charge, IDEMPOTENCY_KEY_UNITS};
use crate::policies::GLOBAL;

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// Largest body read to price a request (`POST /v1/uv/merge`: 20 names and two dates).
const MAX_PRICED_BODY: usize = 16 * 1024;

impl Limiter {
    /// What `req` costs, known before any store work: from its request line and headers, from
    /// the small body of the routes priced by their fields, and from the bytes of a body that
    /// does not state its length (chunked, or HTTP/2 without `content-length`), which is read
    /// here whole — up to the body limit, 413 beyond — so that a body's framing never changes
    /// its price (docs/ratelimit.md "Route costs"). `Err`: the answer, a 413.
    pub(super) async fn price(
        &self,
        req: Request,
        limit: u64,
        label: &str,
    ) -> Result<(Request, u64), Response> {
        let matched = req.extensions().get::<MatchedPath>().cloned();
        let route = matched.as_ref().map_or("", MatchedPath::as_str);
        let stated = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let method = req.method().clone();
        let method = method.as_str();
        let fields = self.terms.needs_body(method, route);
        // A body is read here when the price needs its fields (small bodies only), or its
        // length and it does not say it; a request with no body at all is never read.
        let read = if fields {
            Some(MAX_PRICED_BODY.min(self.body_limit))
        } else if stated.is_none() && !axum::body::HttpBody::is_end_stream(req.body()) {
            Some(self.body_limit)
        } else {
            None
        };
        let (req, body) = match read {
            None => (req, None),
            Some(max) => {
                let (parts, body) = req.into_parts();
                match axum::body::to_bytes(body, max).await {
                    Ok(bytes) => (
                        Request::from_parts(parts, axum::body::Body::from(bytes.clone())),
                        Some(bytes),
                    ),
                    Err(e) => return Err(body_refused(e, route, fields, max)),
                }
            }
        };
        let length = stated.or_else(|| body.as_ref().map(|b| b.len() as u64));
        let body = if fields { body } else { None };
        match self.terms.cost(
            method,
            route,
            req.uri().query(),
            length,
            body.as_deref(),
            limit,
        ) {
            Charge::Units(n) => {
                let keyed = req.headers().contains_key(IDEMPOTENCY_KEY);
                let n = if keyed {
                    (n + IDEMPOTENCY_KEY_UNITS).min(limit.max(1))
                } else {
                    n
                };
                Ok((req, n))
            }
            Charge::TooCostly { cost, limit } => {
                self.decisions.count(GLOBAL, "too_costly", label);
                Err(ApiError::PayloadTooLarge(format!(
                    "this request costs {cost} rate-limit units, more than the burst of {limit} \
                     this client may spend at once; send a smaller request"
                ))
                .into_response())
            }
        }
    }
}

/// The answer to a body that could not be read whole to be priced: too big (413), or broken
/// off or malformed on the way (400).
pub(super) fn body_refused(e: axum::Error, route: &str, fields: bool, max: usize) -> Response {
    let too_big = std::error::Error::source(&e)
        .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
    if too_big {
        let what = if fields {
            format!("a {route} body")
        } else {
            "a request body".to_owned()
        };
        ApiError::PayloadTooLarge(format!("{what} is at most {max} bytes")).into_response()
    } else {
        ApiError::invalid(format!("the request body could not be read: {e}")).into_response()
    }
}
