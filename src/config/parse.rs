//! The value parsers of the clap struct. clap's own answer `-5` with "invalid digit found in
//! string" and `0` with nothing at all; each of these refuses with the rule the value must
//! follow ([`Rule`]), which `cli.rs` tells as `VARIABLE (--flag): must be <rule>, got …`.
//! A range lives on its setting's definition, so the parser and the refusal cannot disagree.

use std::fmt;
use std::net::SocketAddr;

/// What a value must be, e.g. "a whole number ≥ 1".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule(pub String);

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "must be {}", self.0)
    }
}

impl std::error::Error for Rule {}

/// The integer types settings are read into, with the largest each holds (said in the rule,
/// so that a value past it is not refused as if it were below the minimum).
pub(crate) trait Whole: TryFrom<u64> + Clone + Send + Sync + 'static {
    const MAX: u64;
}

impl Whole for u32 {
    const MAX: u64 = u32::MAX as u64;
}

impl Whole for u64 {
    const MAX: u64 = u64::MAX;
}

impl Whole for usize {
    const MAX: u64 = usize::MAX as u64;
}

/// A whole number of at least `min`.
pub(crate) fn at_least<T: Whole>(
    min: u64,
) -> impl Fn(&str) -> Result<T, Rule> + Clone + Send + Sync {
    within(min, T::MAX)
}

/// A whole number within `min..=max` (and what `T` holds).
pub(crate) fn within<T: Whole>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, Rule> + Clone + Send + Sync {
    let max = max.min(T::MAX);
    move |text: &str| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| {
                Rule(if max == u64::MAX {
                    format!("a whole number ≥ {min}")
                } else {
                    format!("a whole number from {min} to {max}")
                })
            })
    }
}

/// A rate strictly between 0 and 1 (`NaN` and infinities included in what is refused).
pub(crate) fn rate(text: &str) -> Result<f64, Rule> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| *r > 0.0 && *r < 1.0)
        .ok_or_else(|| Rule("a number above 0 and below 1".to_owned()))
}

/// An IP address and port: a host name is refused here rather than resolved, since the
/// address bound is then the one written.
pub(super) fn address(text: &str) -> Result<SocketAddr, Rule> {
    text.trim()
        .parse()
        .map_err(|_| Rule("an IP address and port, such as 0.0.0.0:8080 or [::1]:8080".to_owned()))
}

/// An IANA time zone name.
pub(super) fn zone(text: &str) -> Result<chrono_tz::Tz, Rule> {
    text.trim()
        .parse()
        .map_err(|_| Rule("an IANA time zone name, such as UTC or Europe/Paris".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_say_their_range() {
        let positive = at_least::<u64>(1);
        assert_eq!(positive("7"), Ok(7));
        assert_eq!(
            positive("0").unwrap_err().to_string(),
            "must be a whole number ≥ 1"
        );
        assert_eq!(
            positive("-5").unwrap_err().to_string(),
            "must be a whole number ≥ 1"
        );
        assert_eq!(
            at_least::<u64>(0)("abc").unwrap_err().to_string(),
            "must be a whole number ≥ 0"
        );
        let days = within::<u32>(1, 3660);
        assert_eq!(days("3660"), Ok(3660));
        assert_eq!(
            days("3661").unwrap_err().to_string(),
            "must be a whole number from 1 to 3660"
        );
        // Past what the type holds: refused, not wrapped, and the rule says so.
        assert_eq!(
            at_least::<u32>(1)("4294967296").unwrap_err().to_string(),
            "must be a whole number from 1 to 4294967295"
        );
    }

    #[test]
    fn rates_are_strictly_between_0_and_1() {
        assert_eq!(rate("0.01"), Ok(0.01));
        for bad in ["0", "1", "-0.5", "NaN", "inf", "x"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_and_zones() {
        assert!(address("0.0.0.0:8080").is_ok());
        assert!(address("localhost:8080").is_err());
        assert!(zone("Europe/Paris").is_ok());
        assert!(zone("Mars/Olympus").is_err());
    }
}
