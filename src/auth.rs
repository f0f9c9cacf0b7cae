//! The admin bearer-token check, as an extractor admin handlers take.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// Present in a handler's arguments: the request carried the admin token.
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let presented = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or("");
        // Constant-time, so response timing does not reveal how much of a guess was right.
        if !presented.is_empty()
            && bool::from(presented.as_bytes().ct_eq(state.admin_token.as_bytes()))
        {
            Ok(Admin)
        } else {
            Err(ApiError::Unauthorized)
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
