//! Secret settings (the admin token, the JWT HS256 secret, the UV visitor key): one rule for
//! all of them, so a new one cannot be accepted at one character by forgetting a check.

use super::{Invalid, Secret};

/// 128 bits: a secret shorter than this can be guessed offline from what it protects (an
/// admin route's answers, a page's HyperLogLog registers).
pub(crate) const SECRET_BYTES: usize = 16;

/// HS256 signs with the secret as its key, which RFC 7518 (3.2) wants at least as long as the
/// hash: 256 bits.
pub(super) const HS256_SECRET_BYTES: usize = 32;

/// `value` of the secret setting `var`: unset when absent or empty, refused when shorter than
/// `min` bytes. The refusal gives the length, never the value; `unset` ends its hint (what
/// leaving the setting unset does).
pub(crate) fn secret(
    var: &str,
    value: Option<&str>,
    min: usize,
    unset: &str,
) -> Result<Option<Secret>, Invalid> {
    match value {
        None | Some("") => Ok(None),
        Some(secret) if secret.len() < min => Err(Invalid::new(
            var,
            format!("must be at least {min} bytes, got {}", secret.len()),
            format!(
                "write a random secret, e.g. the output of `openssl rand -hex {min}`, or leave \
                 it unset {unset}"
            ),
        )),
        Some(secret) => Ok(Some(Secret(secret.to_owned()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_secret_is_refused_without_being_repeated() {
        let e = secret(
            "GATEWAY_ADMIN_TOKEN",
            Some("t"),
            SECRET_BYTES,
            "to generate one",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "invalid configuration: GATEWAY_ADMIN_TOKEN (--admin-token): must be at least \
                 16 bytes, got 1; write a random secret"
            ),
            "{e}"
        );
        let e = secret("GATEWAY_JWT_SECRET", Some("hunter2hunter2hunter2"), 32, "")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn empty_is_unset_and_long_enough_is_kept() {
        assert_eq!(secret("GATEWAY_ADMIN_TOKEN", Some(""), 16, ""), Ok(None));
        let kept = secret("GATEWAY_ADMIN_TOKEN", Some("0123456789abcdef"), 16, "").unwrap();
        assert_eq!(kept.as_deref(), Some("0123456789abcdef"));
    }
}
