//! Credentials as extractors: the admin bearer token ([`Admin`]) and end-user JWTs
//! ([`Acting`], verified by [`UserTokens`]).

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// What the extractors of this module need of the app state (which hands it out through
/// `FromRef`, so this module does not depend on the state that holds it).
#[derive(Debug)]
pub struct Credentials {
    /// The bearer token admin routes require (configured or generated at start-up).
    pub admin_token: Arc<str>,
    /// End-user JWT verification (`None`: user ids are trusted as given).
    pub user_tokens: Option<UserTokens>,
}

impl Credentials {
    /// Whether `headers` carry the admin bearer token.
    pub fn is_admin(&self, headers: &axum::http::HeaderMap) -> bool {
        let presented = bearer(headers).unwrap_or("");
        // Constant-time, so response timing does not reveal how much of a guess was right.
        !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(self.admin_token.as_bytes()))
    }
}

/// The token of an `Authorization: Bearer <token>` header, trimmed. The scheme is matched
/// without regard to case (RFC 9110 §11.1: `bearer`, `BEARER` are the same scheme), so a
/// client library that lower-cases it is not refused.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Present in a handler's arguments: the request carried the admin token.
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl<S> FromRequestParts<S> for Admin
where
    S: Send + Sync,
    Arc<Credentials>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let state = Arc::<Credentials>::from_ref(state);
        if state.is_admin(&parts.headers) {
            Ok(Admin)
        } else {
            Err(ApiError::Unauthorized(
                "a valid admin bearer token is required",
            ))
        }
    }
}

/// A fresh random token: 32 bytes, hex.
pub fn generate_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Verifies end-user JWTs (docs/clients.md "Who may do what"): signature, `exp` and `nbf` (with
/// `GATEWAY_JWT_LEEWAY_S` of clock leeway), and `iss`/`aud` when configured. The algorithm is
/// fixed by the key, never taken from the token's header, and a token naming header parameters
/// as critical (`crit`) is refused: the gateway understands no extension, and RFC 7515 §4.1.11
/// says a token whose critical parameters are not understood is invalid.
pub struct UserTokens {
    key: jsonwebtoken::DecodingKey,
    validation: jsonwebtoken::Validation,
}

impl std::fmt::Debug for UserTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserTokens")
            .field("algorithms", &self.validation.algorithms)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
struct Claims {
    sub: String,
}

impl UserTokens {
    pub fn new(settings: &crate::config::JwtSettings) -> Result<Self, crate::config::Invalid> {
        use crate::config::JwtKey;
        use jsonwebtoken::{Algorithm, DecodingKey, Validation};
        let (key, algorithm) = match &settings.key {
            JwtKey::Secret(secret) => (
                DecodingKey::from_secret(secret.as_bytes()),
                Algorithm::HS256,
            ),
            JwtKey::PublicKeyPem(pem) => match DecodingKey::from_rsa_pem(pem) {
                Ok(key) => (key, Algorithm::RS256),
                Err(_) => (
                    DecodingKey::from_ec_pem(pem).map_err(|e| {
                        crate::config::Invalid::new(
                            "GATEWAY_JWT_PUBLIC_KEY_FILE",
                            format!("neither an RSA nor an EC public key ({e})"),
                            "write the path of a PEM public key: RSA for RS256, EC P-256 for ES256",
                        )
                    })?,
                    Algorithm::ES256,
                ),
            },
        };
        let mut validation = Validation::new(algorithm);
        // A configured `iss` or `aud` is required, not only checked when present: jsonwebtoken
        // compares them only when the claim is there, so a token without it would pass.
        let mut required = vec!["exp", "sub"];
        required.extend(settings.issuer.as_ref().map(|_| "iss"));
        required.extend(settings.audience.as_ref().map(|_| "aud"));
        validation.set_required_spec_claims(&required);
        // `nbf` is checked when present (jsonwebtoken skips it by default), and both `exp` and
        // `nbf` get the configured leeway rather than the library's 60 s.
        validation.validate_nbf = true;
        validation.leeway = settings.leeway_s;
        if let Some(issuer) = &settings.issuer {
            validation.set_issuer(&[issuer]);
        }
        match &settings.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        Ok(Self { key, validation })
    }

    /// The token's `sub`, if the token is valid.
    pub fn subject(&self, token: &str) -> Option<String> {
        // jsonwebtoken parses `crit` but does not act on it: refusing is up to us. Any `crit`
        // at all, since the gateway implements no header extension that one could name.
        if jsonwebtoken::decode_header(token).ok()?.crit.is_some() {
            return None;
        }
        jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation)
            .ok()
            .map(|t| t.claims.sub)
    }
}

/// Who a request may act for on user routes, from its `Authorization` header. Handlers that act
/// for one user call [`Acting::for_user`] with that user's id.
#[derive(Debug, Clone)]
pub enum Acting {
    /// No user tokens configured: user ids are trusted as given.
    Anyone,
    /// The admin token: may act for any user.
    Admin,
    /// A valid user token for this `sub`.
    User(String),
    /// No token, or one that does not verify.
    Nobody,
}

impl Acting {
    /// Listings that name other users (a voucher's buyers): with user tokens configured, the
    /// admin's alone — a user's token speaks for that user only (`403`), no token is `401`.
    /// Without user tokens, open, as every user route is then.
    pub fn for_all_users(&self) -> Result<(), ApiError> {
        match self {
            Self::Anyone | Self::Admin => Ok(()),
            Self::User(_) => Err(ApiError::Forbidden(
                "only the admin token may list other users' data".to_owned(),
            )),
            Self::Nobody => Err(ApiError::Unauthorized(
                "the admin bearer token is required to list other users' data",
            )),
        }
    }

    pub fn for_user(&self, user: crate::types::UserId) -> Result<(), ApiError> {
        match self {
            Self::Anyone | Self::Admin => Ok(()),
            Self::User(sub) if *sub == user.0.to_string() => Ok(()),
            Self::User(_) => Err(ApiError::Forbidden(format!(
                "the token may not act for user {}",
                user.0
            ))),
            Self::Nobody => Err(ApiError::Unauthorized(
                "a valid user token (Authorization: Bearer <JWT>) is required",
            )),
        }
    }
}

impl<S> FromRequestParts<S> for Acting
where
    S: Send + Sync,
    Arc<Credentials>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let state = Arc::<Credentials>::from_ref(state);
        let Some(tokens) = &state.user_tokens else {
            return Ok(Self::Anyone);
        };
        let Some(token) = bearer(&parts.headers).filter(|t| !t.is_empty()) else {
            return Ok(Self::Nobody);
        };
        if bool::from(token.as_bytes().ct_eq(state.admin_token.as_bytes())) {
            return Ok(Self::Admin);
        }
        Ok(tokens.subject(token).map_or(Self::Nobody, Self::User))
    }
}
