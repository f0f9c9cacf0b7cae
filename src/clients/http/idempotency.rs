//! The `Idempotency-Key` header, scoped to its caller.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::clients::Caller;
use crate::error::ApiError;

/// The `Idempotency-Key` header (docs/clients.md "Retries: `Idempotency-Key`"): absent, or 1–128
/// visible ASCII characters (else 400). Carries the SHA-256 of the caller's namespace and the key,
/// which is all the store ever sees: a key is its caller's
/// ([`Caller::idempotency_namespace`]), so another caller sending the same string
/// neither replays nor learns of the first reply.
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub Option<String>);

impl IdempotencyKey {
    /// The key of a route that acts for `user`: each user's keys are their own too, whoever
    /// sends them (one back end for many users, or users behind one address).
    pub fn for_user(self, user: u32) -> Self {
        Self(self.0.map(|digest| {
            let mut text = digest.into_bytes();
            text.extend_from_slice(b"|user:");
            text.extend_from_slice(itoa::Buffer::new().format(user).as_bytes());
            crate::types::sha256_hex(&text)
        }))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let mut keys = parts.headers.get_all("idempotency-key").iter();
        let Some(key) = keys.next() else {
            return Ok(Self(None));
        };
        let bytes = key.as_bytes();
        let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
        if keys.next().is_some() || bytes.is_empty() || bytes.len() > 128 || !visible {
            return Err(ApiError::invalid(
                "Idempotency-Key must be one header of 1-128 visible ASCII characters",
            ));
        }
        let namespace = parts
            .extensions
            .get::<Caller>()
            .map_or("", |caller| caller.idempotency_namespace());
        if namespace.is_empty() {
            // Without a namespace, the digest of the key alone: records made before keys had
            // namespaces still match.
            return Ok(Self(Some(crate::types::sha256_hex(bytes))));
        }
        let mut text = Vec::with_capacity(namespace.len() + 1 + bytes.len());
        text.extend_from_slice(namespace.as_bytes());
        text.push(b'|');
        text.extend_from_slice(bytes);
        Ok(Self(Some(crate::types::sha256_hex(&text))))
    }
}
