//! Extractors whose rejections are [`ApiError`]s, so malformed JSON, paths and queries come
//! back as problem+json like every other failure.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// `axum::Json` with problem+json rejections.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

/// A body that parses is read with plain `serde_json`; anything else goes to `axum::Json`,
/// whose answer (415, 400, 422 naming the failing field) is kept word for word. `axum::Json`
/// alone parses every body through `serde_path_to_error` and a MIME parser, a few percent of a
/// page view's instructions spent on the path of errors that did not happen.
impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !plain_json(req.headers()) {
            let axum::Json(Object(value)) =
                axum::Json::<Object<T>>::from_request(req, state).await?;
            return Ok(Self(value));
        }
        let bytes = Bytes::from_request(req, state).await?;
        match serde_json::from_slice(&bytes) {
            Ok(Object(value)) => Ok(Self(value)),
            Err(e) => Err(match axum::Json::<Object<T>>::from_bytes(&bytes) {
                Err(rejection) => rejection.into(),
                // Not reached: both parse with serde_json.
                Ok(_) => ApiError::invalid(format!("invalid JSON body: {e}")),
            }),
        }
    }
}

/// A `T` read from a JSON object only. A derived `Deserialize` also takes an array of the
/// fields in declaration order (`[1.0, 2.0]` for `{"lon", "lat"}`), a shape docs/api.md never
/// offers and no field name checks: a client's mistake would be silently accepted.
#[derive(Debug)]
pub struct Object<T>(pub T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(ObjectOnly(deserializer)).map(Object)
    }
}

/// Reads a struct as a map, so an array is `invalid type: sequence, expected struct ...`.
/// Only the outermost call goes through it: nested values use the inner deserializer.
struct ObjectOnly<D>(D);

impl<'de, D: serde::Deserializer<'de>> serde::Deserializer<'de> for ObjectOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(v)
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(v)
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_option(v)
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, v)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The content types nearly every JSON client sends; any other goes to axum's own check.
fn plain_json(headers: &header::HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.eq_ignore_ascii_case(b"application/json")
            || v.eq_ignore_ascii_case(b"application/json; charset=utf-8")
    })
}

/// `axum::extract::Path` with problem+json rejections.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);

/// `axum::extract::Query` with problem+json rejections.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// For a route that takes no query parameters: any is `400 invalid_argument`, as an unknown one
/// is on the routes that take some (their query types deny unknown fields), with the same
/// detail. Silently ignoring one would let a client believe it was applied (`?limit=1` on a
/// route that does not page).
#[derive(Debug)]
pub struct NoQuery;

/// No parameters: every name is unknown.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParameters {}

impl<S: Send + Sync> FromRequestParts<S> for NoQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if parts.uri.query().is_none_or(str::is_empty) {
            return Ok(Self);
        }
        ApiQuery::<NoParameters>::from_request_parts(parts, state)
            .await
            .map(|_| Self)
    }
}

impl<T> axum::response::IntoResponse for ApiJson<T>
where
    T: serde::Serialize,
{
    fn into_response(self) -> axum::response::Response {
        axum::Json(self.0).into_response()
    }
}

/// A JSON body that may be absent: no body (or an empty one), or `null`, is `T::default()`.
/// `null` because the OpenAPI document declares such a body as `Option<T>`, which it writes as
/// "`T` or `null`".
///
/// Written by hand because `axum::Json` insists on a body and a content type, while docs/api.md lets
/// `POST /v1/checkins/{user_id}` be sent bare by curl users.
#[derive(Debug)]
pub struct OptionalJson<T>(pub T);

impl<T, S> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = Bytes::from_request(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        // A body, unlike no body, says what it is, as on every other route.
        let Some(ct) = content_type else {
            return Err(ApiError::UnsupportedMediaType(
                "a body needs Content-Type: application/json".to_owned(),
            ));
        };
        let essence = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(ApiError::UnsupportedMediaType(format!(
                "expected application/json, got {essence}"
            )));
        }
        serde_json::from_slice::<Option<Object<T>>>(&bytes)
            .map(|body| Self(body.map_or_else(T::default, |Object(value)| value)))
            .map_err(|e| ApiError::invalid(format!("invalid JSON body: {e}")))
    }
}

fn from_status(status: StatusCode, text: String) -> ApiError {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(text),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType(text),
        StatusCode::INTERNAL_SERVER_ERROR => ApiError::Internal(text),
        _ => ApiError::InvalidArgument(text),
    }
}

/// Each of axum's rejections becomes the [`ApiError`] of its status, with its text.
macro_rules! from_rejections {
    ($($rejection:ty),*) => {
        $(impl From<$rejection> for ApiError {
            fn from(r: $rejection) -> Self {
                from_status(r.status(), r.body_text())
            }
        })*
    };
}

from_rejections!(JsonRejection, BytesRejection, PathRejection, QueryRejection);

/// The one batch rule of every route that takes a batch (docs/api.md "Conventions"): an empty
/// batch is `400 invalid_argument`, one over `cap` (`GATEWAY_MAX_BATCH`) is
/// `413 payload_too_large`. `what` names the field in the message.
pub fn batch_size(len: usize, cap: usize, what: &str) -> Result<(), ApiError> {
    if len == 0 {
        return Err(ApiError::invalid(format!("{what} is empty")));
    }
    if len > cap {
        return Err(ApiError::PayloadTooLarge(format!(
            "at most {cap} {what} per request, got {len}"
        )));
    }
    Ok(())
}

/// What the OpenAPI document says of the `Idempotency-Key` header on a route whose retries it
/// makes safe. A macro, not a `const`, so that `concat!` can add a route's own words.
macro_rules! idempotency_key_doc {
    () => {
        "1-128 visible ASCII characters; makes a retry safe for 24 h"
    };
}
pub(crate) use idempotency_key_doc;

/// The answer to a write made under an optional `Idempotency-Key`: the write's own reply, the
/// first reply again (marked as replayed), or 422 when the key came with a different request.
pub fn once_reply<T>(
    once: crate::types::Once<T>,
    reply: impl FnOnce(T) -> axum::response::Response,
) -> Result<axum::response::Response, ApiError> {
    match once {
        crate::types::Once::Now(outcome) => Ok(reply(outcome)),
        crate::types::Once::Replayed(outcome) => Ok(replayed(reply(outcome))),
        crate::types::Once::KeyReused => Err(ApiError::Unprocessable(
            "this Idempotency-Key was used for a different request".to_owned(),
        )),
    }
}

/// Marks a response as the replay of an earlier one under the same `Idempotency-Key`.
pub fn replayed(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        "idempotency-replayed",
        axum::http::HeaderValue::from_static("true"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Visit {
        visitor: String,
        count: u32,
    }

    fn request(content_type: &str, body: &'static str) -> Request {
        Request::builder()
            .method("POST")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap()
    }

    /// The fast path answers every request exactly as `axum::Json` does.
    #[tokio::test]
    async fn json_bodies_are_refused_as_axum_refuses_them() {
        for (content_type, body) in [
            ("application/json", r#"{"visitor": "v", "count": 2}"#),
            ("application/json", r#"{"visitor": "v", "count": "2"}"#),
            ("application/json", r#"{"visitor": "v""#),
            (
                "Application/JSON; charset=utf-8",
                r#"{"visitor": 1, "count": 2}"#,
            ),
            (
                "application/json; charset",
                r#"{"visitor": "v", "count": 2}"#,
            ),
            (
                "application/problem+json",
                r#"{"visitor": "v", "count": 2}"#,
            ),
            ("text/plain", r#"{"visitor": "v", "count": 2}"#),
        ] {
            let ours = ApiJson::<Visit>::from_request(request(content_type, body), &())
                .await
                .map(|ApiJson(v)| v);
            let axum = axum::Json::<Visit>::from_request(request(content_type, body), &())
                .await
                .map(|axum::Json(v)| v)
                .map_err(ApiError::from);
            assert_eq!(
                format!("{ours:?}"),
                format!("{axum:?}"),
                "{content_type}: {body}"
            );
        }
    }
}
