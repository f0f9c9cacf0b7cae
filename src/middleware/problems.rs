//! Makes every error response a problem document, and logs server errors with the request's
//! method, route and id (the error travels in the response extensions; see `error.rs`).

use std::any::Any;
use std::sync::Arc;

use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::error::{problem_response, ApiError};

/// Rewrites error responses produced outside our handlers (axum's 405, the request timeout's
/// 503, ...) into problem+json, keeping their other headers (`Allow`, `Retry-After`). Called by
/// `observe::record` on every response rather than as a middleware of its own: one
/// `from_fn` layer fewer boxes each request's future once less.
///
/// The error lines name the request themselves: the request span is only recorded when
/// `RUST_LOG` asks for DEBUG or traces are exported (see `middleware::request_span`).
pub fn as_problem(response: Response, origin: &Origin<'_>) -> Response {
    let Origin {
        method,
        route,
        request_id,
    } = origin;
    if let Some(err) = response.extensions().get::<Arc<ApiError>>() {
        tracing::error!(error = %err, code = err.code(), method, route, request_id, "request failed");
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_problem(&response) {
        return response;
    }
    let (code, detail) = match status {
        StatusCode::BAD_REQUEST => ("invalid_argument", "the request is malformed"),
        StatusCode::UNAUTHORIZED => ("unauthorized", "a valid admin bearer token is required"),
        StatusCode::NOT_FOUND => ("not_found", "no such route"),
        StatusCode::METHOD_NOT_ALLOWED => {
            ("method_not_allowed", "method not allowed on this route")
        }
        StatusCode::PAYLOAD_TOO_LARGE => ("payload_too_large", "the request body is too large"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ("unsupported_media_type", "expected application/json")
        }
        StatusCode::UNPROCESSABLE_ENTITY => ("unprocessable", "the request cannot be processed"),
        StatusCode::TOO_MANY_REQUESTS => ("rate_limited", "rate limit exceeded"),
        // The client's doing (a body that stopped arriving), so not logged as an error.
        StatusCode::REQUEST_TIMEOUT => ("request_timeout", "the request did not arrive in time"),
        StatusCode::URI_TOO_LONG => ("uri_too_long", "the request target is too long"),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            ("headers_too_large", "the request head is too large")
        }
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT => {
            tracing::error!(%status, method, route, request_id, "request timed out");
            (
                "backend_unavailable",
                "the request did not complete in time",
            )
        }
        s if s.is_server_error() => ("internal", "internal error"),
        _ => ("invalid_argument", "the request was refused"),
    };
    let (parts, _) = response.into_parts();
    let mut problem = problem_response(status, code, detail.to_owned(), serde_json::Map::new());
    for (name, value) in &parts.headers {
        // The body is replaced: its encoding (a compressed error page) goes with it.
        if name != CONTENT_TYPE && name != CONTENT_LENGTH && name != CONTENT_ENCODING {
            problem.headers_mut().insert(name.clone(), value.clone());
        }
    }
    problem
}

/// The request an error line is about.
#[derive(Debug)]
pub struct Origin<'a> {
    pub method: &'a str,
    pub route: &'a str,
    pub request_id: &'a str,
}

fn is_problem(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"))
}

/// A panicking handler answers 500 `internal` instead of dropping the connection.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    tracing::error!(panic = %what, "handler panicked");
    ApiError::Internal(what).into_response()
}
