//! The one error type of the HTTP surface, rendered as RFC 9457 `application/problem+json`
//! with a stable `code` (docs/api.md "Conventions").

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::store::error::StoreError;

/// Everything a request can fail with. Each variant's doc names its status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 `invalid_argument`: malformed JSON, bad field, bad path segment, empty batch.
    #[error("{0}")]
    InvalidArgument(String),
    /// 401 `unauthorized`: a missing or wrong credential (admin token, API key, user token);
    /// the detail says which was expected.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 403 `forbidden`: a valid user token acting for another user.
    #[error("{0}")]
    Forbidden(String),
    /// 404 `not_found`.
    #[error("{0}")]
    NotFound(String),
    /// 405 `method_not_allowed`.
    #[error("method not allowed on this route")]
    MethodNotAllowed,
    /// 408 `request_timeout`: the request body stopped arriving before the request timeout.
    #[error("{0}")]
    RequestTimeout(String),
    /// 409 with a domain-specific code (`conflict`, `sold_out`, ...) and optional extra members.
    #[error("{detail}")]
    Conflict {
        code: &'static str,
        detail: String,
        extra: Option<serde_json::Map<String, serde_json::Value>>,
    },
    /// 413 `payload_too_large`.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 414 `uri_too_long`: the request target is over the server's limit.
    #[error("{0}")]
    UriTooLong(String),
    /// 415 `unsupported_media_type`.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422 `unprocessable`: well-formed but impossible (a future date).
    #[error("{0}")]
    Unprocessable(String),
    /// 429 `rate_limited`; `retry_after` in whole seconds; `policy` the limit that refused
    /// (`global`, or a limit policy's name: docs/policies.md).
    #[error("rate limit exceeded ({policy}), retry in {retry_after} s")]
    RateLimited { retry_after: u64, policy: String },
    /// 429 `too_many_streams`: the client holds as many event streams as it may
    /// (`GATEWAY_MAX_STREAMS_PER_CLIENT`, docs/api.md "Events").
    #[error("this client holds {0} event streams already, the most it may (GATEWAY_MAX_STREAMS_PER_CLIENT): close one first")]
    TooManyStreams(usize),
    /// 431 `headers_too_large`: the request head is over the server's limits.
    #[error("{0}")]
    HeadersTooLarge(String),
    /// 503 `backend_unavailable`: the store cannot be reached or timed out.
    #[error("the store is unavailable")]
    BackendUnavailable(#[source] StoreError),
    /// 500 `internal`: a bug; details are logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
}

/// An RFC 9457 problem document as this API sends it.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Always `about:blank`: `title` is the HTTP reason phrase.
    #[serde(rename = "type")]
    #[schema(example = "about:blank")]
    pub kind: String,
    #[schema(example = "Conflict")]
    pub title: String,
    #[schema(example = 409)]
    pub status: u16,
    #[schema(example = "voucher v1 is sold out")]
    pub detail: String,
    /// Stable snake_case code that clients switch on.
    #[schema(example = "sold_out")]
    pub code: String,
    /// The W3C trace id of the request when traces are exported (OTLP): quote it to find the
    /// request's trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Extra members some problems carry (e.g. `order_ids` for `already_ordered`).
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ApiError {
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::InvalidArgument(detail.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UriTooLong(_) => StatusCode::URI_TOO_LONG,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::RateLimited { .. } | Self::TooManyStreams(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::BackendUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidArgument(_) => "invalid_argument",
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::RequestTimeout(_) => "request_timeout",
            Self::Conflict { code, .. } => code,
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::UriTooLong(_) => "uri_too_long",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::Unprocessable(_) => "unprocessable",
            Self::RateLimited { .. } => "rate_limited",
            Self::TooManyStreams(_) => "too_many_streams",
            Self::HeadersTooLarge(_) => "headers_too_large",
            Self::BackendUnavailable(_) => "backend_unavailable",
            Self::Internal(_) => "internal",
        }
    }

    /// The client-facing detail: server-side failures say nothing about internals.
    fn detail(&self) -> String {
        match self {
            Self::BackendUnavailable(StoreError::Timeout) => {
                "the store did not answer in time".to_owned()
            }
            Self::BackendUnavailable(StoreError::Unreplicated) => {
                "the store's replicas did not confirm the write in time; retry with the same \
                 Idempotency-Key"
                    .to_owned()
            }
            Self::BackendUnavailable(StoreError::Unsupported(command)) => format!(
                "the store's server has no {command} command: a module this data was made with \
                 is not loaded there"
            ),
            Self::BackendUnavailable(_) => "the store cannot be reached".to_owned(),
            Self::Internal(_) => "internal error".to_owned(),
            other => other.to_string(),
        }
    }
}

impl From<crate::types::Refused> for ApiError {
    fn from(r: crate::types::Refused) -> Self {
        match r {
            crate::types::Refused::Invalid(detail) => Self::InvalidArgument(detail),
            crate::types::Refused::Unprocessable(detail) => Self::Unprocessable(detail),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Internal(msg) => Self::Internal(msg),
            other => Self::BackendUnavailable(other),
        }
    }
}

/// When to retry a 503 (the store failing over or out of reach, or a request past its
/// timeout): a second is about how long a Cluster replica takes to be promoted once its master
/// is flagged failed.
pub const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);

/// `Retry-After: <wait>` in whole seconds, rounded up and at least 1 (`0` would invite a retry
/// that is refused again): what every refusal that knows when to come back sends (a 429, a
/// lock held by another owner).
pub fn set_retry_after(headers: &mut HeaderMap, wait: Duration) {
    let seconds = wait.as_nanos().div_ceil(1_000_000_000).max(1);
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from(u64::try_from(seconds).unwrap_or(u64::MAX)),
    );
}

/// Renders a problem document for `status` with `code` and `detail`.
pub fn problem_response(
    status: StatusCode,
    code: &str,
    detail: String,
    extra: serde_json::Map<String, serde_json::Value>,
) -> Response {
    let problem = Problem {
        kind: "about:blank".to_owned(),
        title: status.canonical_reason().unwrap_or("Error").to_owned(),
        status: status.as_u16(),
        detail,
        code: code.to_owned(),
        trace_id: crate::telemetry::current_trace_id(),
        extra,
    };
    let body = serde_json::to_vec(&problem).unwrap_or_default();
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let extra = match &self {
            Self::Conflict {
                extra: Some(extra), ..
            } => extra.clone(),
            // A code, never the backend's text: `connection_refused`, `timeout`, ...
            // (docs/operations.md "Probes"), so an operator sees what to fix.
            Self::BackendUnavailable(e) => {
                serde_json::Map::from_iter([("reason".to_owned(), e.reason().into())])
            }
            Self::RateLimited { policy, .. } => {
                serde_json::Map::from_iter([("policy".to_owned(), policy.as_str().into())])
            }
            _ => serde_json::Map::new(),
        };
        let mut response = problem_response(status, self.code(), self.detail(), extra);
        match &self {
            Self::Unauthorized(_) => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"redis-gateway\""),
                );
            }
            Self::RateLimited { retry_after, .. } => {
                set_retry_after(response.headers_mut(), Duration::from_secs(*retry_after));
            }
            Self::BackendUnavailable(_) => {
                set_retry_after(response.headers_mut(), UNAVAILABLE_RETRY);
            }
            _ => {}
        }
        if status.is_server_error() {
            // Logged inside the request span by `middleware::log_errors`, not here: a conversion
            // should not have side effects.
            response.extensions_mut().insert(Arc::new(self));
        }
        response
    }
}

/// Result alias for handlers.
pub type ApiResult<T> = Result<T, ApiError>;

/// Error responses shared by operations, named in `#[utoipa::path(responses(...))]` so each
/// handler lists which failures it can give without repeating the problem+json body. They
/// describe the document only; [`ApiError`] is what handlers return.
#[allow(dead_code)]
pub mod responses {
    use std::collections::BTreeMap;
    use std::marker::PhantomData;

    use utoipa::openapi::{RefOr, Response};
    use utoipa::IntoResponses;

    use super::Problem;

    /// What every store-backed operation can answer.
    #[derive(Debug, IntoResponses)]
    pub enum StoreErrors {
        /// `invalid_argument`: a bad path segment, query parameter or body field.
        #[response(status = 400, content_type = "application/problem+json")]
        Invalid(Problem),
        /// `backend_unavailable`: the store cannot be reached or timed out.
        #[response(status = 503, content_type = "application/problem+json")]
        Unavailable(Problem),
    }

    /// `unauthorized`: the admin bearer token is missing or wrong (with `WWW-Authenticate`).
    #[derive(Debug, IntoResponses)]
    #[response(status = 401, content_type = "application/problem+json")]
    pub struct Unauthorized(Problem);

    /// `unauthorized`: with a clients file, the back-end routes (rate-limit checks, locks,
    /// queues) need an `X-Api-Key` unless `GATEWAY_ANONYMOUS_BACKEND_ROUTES=on`.
    #[derive(Debug, IntoResponses)]
    #[response(status = 401, content_type = "application/problem+json")]
    pub struct NeedsApiKey(Problem);

    /// Routes that act for one user, when end-user JWTs are configured.
    #[derive(Debug, IntoResponses)]
    pub enum UserAuth {
        /// `unauthorized`: no valid user token (with `WWW-Authenticate`).
        #[response(status = 401, content_type = "application/problem+json")]
        Unauthorized(Problem),
        /// `forbidden`: a valid user token for another user.
        #[response(status = 403, content_type = "application/problem+json")]
        Forbidden(Problem),
    }

    /// `not_found`.
    #[derive(Debug, IntoResponses)]
    #[response(status = 404, content_type = "application/problem+json")]
    pub struct NotFound(Problem);

    /// `payload_too_large`: the body or a batch is over its limit.
    #[derive(Debug, IntoResponses)]
    #[response(status = 413, content_type = "application/problem+json")]
    pub struct TooLarge(Problem);

    /// `unsupported_media_type`: the body is not `application/json`.
    #[derive(Debug, IntoResponses)]
    #[response(status = 415, content_type = "application/problem+json")]
    pub struct NotJson(Problem);

    /// `unprocessable`: well-formed but impossible (a future date, one past retention).
    #[derive(Debug, IntoResponses)]
    #[response(status = 422, content_type = "application/problem+json")]
    pub struct Unprocessable(Problem);

    /// Two sets as one, so that operations which fail alike name their failures in one word.
    /// The sets must not share a status (the second would win).
    #[derive(Debug)]
    pub struct And<A, B>(PhantomData<(A, B)>);

    impl<A: IntoResponses, B: IntoResponses> IntoResponses for And<A, B> {
        fn responses() -> BTreeMap<String, RefOr<Response>> {
            let mut all = A::responses();
            all.extend(B::responses());
            all
        }
    }

    /// A read of one named thing, which may not exist.
    pub type Lookup = And<StoreErrors, NotFound>;

    /// An operation with a JSON body.
    pub type JsonBody = And<StoreErrors, And<TooLarge, NotJson>>;

    /// A back-end route (see [`NeedsApiKey`]) without a body.
    pub type Backend = And<StoreErrors, NeedsApiKey>;

    /// A back-end route with a JSON body.
    pub type BackendJson = And<JsonBody, NeedsApiKey>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_refusals_keep_their_codes() {
        let invalid = ApiError::from(crate::types::Refused::Invalid("bad".to_owned()));
        assert_eq!(
            (invalid.code(), invalid.status().as_u16()),
            ("invalid_argument", 400)
        );
        let late = ApiError::from(crate::types::Refused::Unprocessable("too old".to_owned()));
        assert_eq!(
            (late.code(), late.status().as_u16()),
            ("unprocessable", 422)
        );
        assert_eq!(late.detail(), "too old");
    }

    #[test]
    fn a_store_outage_says_when_to_retry() {
        let response = ApiError::BackendUnavailable(StoreError::Timeout).into_response();
        assert_eq!(response.status().as_u16(), 503);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up_and_at_least_one() {
        for (wait, header) in [
            (Duration::ZERO, "1"),
            (Duration::from_millis(1), "1"),
            (Duration::from_millis(1_000), "1"),
            (Duration::from_millis(1_001), "2"),
            (Duration::from_secs(60), "60"),
        ] {
            let mut headers = HeaderMap::new();
            set_retry_after(&mut headers, wait);
            assert_eq!(headers[header::RETRY_AFTER], header, "{wait:?}");
        }
    }
}
