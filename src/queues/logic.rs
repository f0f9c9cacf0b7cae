//! The queue rules that need no store: the ranges of docs/api.md "Delayed queues" and the
//! encoding of job records shared by both backends' replies.

use super::{Due, MAX_PAYLOAD_BYTES};
use crate::types::Refused;

/// Largest `delay_ms`: one year (docs/api.md).
pub const MAX_DELAY_MS: u64 = 31_536_000_000;
/// Most jobs one claim returns.
pub const MAX_CLAIM: u32 = 100;
/// `visibility_ms` range and default.
pub const VISIBILITY_MS: std::ops::RangeInclusive<u64> = 1_000..=43_200_000;
pub const DEFAULT_VISIBILITY_MS: u64 = 30_000;
/// Longest long poll.
pub const MAX_WAIT_MS: u64 = 20_000;
/// `max_attempts` range (docs/api.md leaves the top open; 1,000 keeps a poisoned job from
/// circulating for ever) and default.
pub const MAX_ATTEMPTS: u32 = 1_000;
pub const DEFAULT_ATTEMPTS: u32 = 10;

fn within<T: PartialOrd + std::fmt::Display>(what: &str, v: T, lo: T, hi: T) -> Result<T, Refused> {
    if v < lo || v > hi {
        return Err(Refused::invalid(format!(
            "{what} must be within {lo}..={hi}, got {v}"
        )));
    }
    Ok(v)
}

/// The due time of a new job from `delay_ms` or `run_at` (unix ms; not both). `run_at` may be
/// in the past (due at once) but no further ahead of `now_ms` than the largest delay.
pub fn due(delay_ms: Option<u64>, run_at: Option<i64>, now_ms: i64) -> Result<Due, Refused> {
    match (delay_ms, run_at) {
        (Some(_), Some(_)) => Err(Refused::invalid("give delay_ms or run_at, not both")),
        (Some(d), None) => within("delay_ms", d, 0, MAX_DELAY_MS).map(Due::In),
        (None, Some(at)) => {
            if at > now_ms.saturating_add(MAX_DELAY_MS as i64) {
                return Err(Refused::invalid(
                    "run_at may be at most one year (31536000000 ms) ahead",
                ));
            }
            Ok(Due::At(at.max(0)))
        }
        (None, None) => Ok(Due::In(0)),
    }
}

/// The payload's JSON text as sent, if within [`MAX_PAYLOAD_BYTES`].
pub fn payload(text: &str) -> Result<String, Refused> {
    if text.len() > MAX_PAYLOAD_BYTES {
        return Err(Refused::invalid(format!(
            "payload must be at most {MAX_PAYLOAD_BYTES} bytes serialized, got {}",
            text.len()
        )));
    }
    Ok(text.to_owned())
}

pub fn max_attempts(v: Option<u32>) -> Result<u32, Refused> {
    within(
        "max_attempts",
        v.unwrap_or(DEFAULT_ATTEMPTS),
        1,
        MAX_ATTEMPTS,
    )
}

/// `(max, visibility_ms, wait_ms)` of a claim, defaults filled in.
pub fn claim(
    max: Option<u32>,
    visibility_ms: Option<u64>,
    wait_ms: Option<u64>,
) -> Result<(u32, u64, u64), Refused> {
    Ok((
        within("max", max.unwrap_or(1), 1, MAX_CLAIM)?,
        within(
            "visibility_ms",
            visibility_ms.unwrap_or(DEFAULT_VISIBILITY_MS),
            *VISIBILITY_MS.start(),
            *VISIBILITY_MS.end(),
        )?,
        within("wait_ms", wait_ms.unwrap_or(0), 0, MAX_WAIT_MS)?,
    ))
}

/// A receipt as the stores make them, `<attempts>.<sequence>`: anything else can never match,
/// so it is refused before reaching the store.
pub fn receipt(s: &str) -> Result<&str, Refused> {
    let ok = |part: &str| {
        !part.is_empty() && part.len() <= 20 && part.bytes().all(|b| b.is_ascii_digit())
    };
    match s.split_once('.') {
        Some((a, n)) if ok(a) && ok(n) => Ok(s),
        _ => Err(Refused::invalid(format!(
            "receipt must be one a claim returned, got {:?}",
            s.chars().take(40).collect::<String>()
        ))),
    }
}

/// Whether a queue that has issued receipts up to sequence `issued` ever issued `receipt` (one
/// [`receipt`] accepted): how an ack tells a job that is gone (acked, cancelled: its receipt
/// was issued) from one that never existed (queue_ack.lua does the same).
pub fn issued(receipt: &str, issued: u64) -> bool {
    receipt
        .rsplit_once('.')
        .and_then(|(_, seq)| seq.parse::<u64>().ok())
        .is_some_and(|seq| (1..=issued).contains(&seq))
}

/// A job's bookkeeping as both backends keep it beside its payload:
/// `<run_at> <attempts> <max_attempts> <receipt or ->`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub run_at: i64,
    pub attempts: u32,
    pub max_attempts: u32,
    pub receipt: Option<String>,
}

impl Meta {
    pub fn parse(s: &str) -> Option<Self> {
        let mut it = s.split(' ');
        let run_at = it.next()?.parse().ok()?;
        let attempts = it.next()?.parse().ok()?;
        let max_attempts = it.next()?.parse().ok()?;
        let receipt = match it.next()? {
            "-" => None,
            r => Some(r.to_owned()),
        };
        Some(Self {
            run_at,
            attempts,
            max_attempts,
            receipt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(due(None, None, 0), Ok(Due::In(0)));
        assert!(due(Some(1), Some(1), 0).is_err());
        assert!(due(Some(MAX_DELAY_MS + 1), None, 0).is_err());
        assert_eq!(due(None, Some(-5), 0), Ok(Due::At(0)));
        assert!(due(None, Some(MAX_DELAY_MS as i64 + 1), 0).is_err());
        assert!(claim(Some(0), None, None).is_err());
        assert!(claim(Some(101), None, None).is_err());
        assert!(claim(None, Some(999), None).is_err());
        assert!(claim(None, Some(43_200_001), None).is_err());
        assert!(claim(None, None, Some(20_001)).is_err());
        assert_eq!(claim(None, None, None), Ok((1, 30_000, 0)));
        assert!(max_attempts(Some(0)).is_err());
        assert_eq!(max_attempts(None), Ok(10));
        let big = format!("\"{}\"", "x".repeat(MAX_PAYLOAD_BYTES));
        assert!(payload(&big).is_err(), "quotes make it 2 bytes over");
        assert_eq!(payload("1e15").as_deref(), Ok("1e15"), "kept as sent");
        assert!(receipt("3.17").is_ok());
        for bad in ["", "3", "3.", ".1", "a.1", "1.2.3"] {
            assert!(receipt(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn meta_round_trips() {
        let m = Meta::parse("1700000000000 2 10 2.7").unwrap();
        assert_eq!(m.receipt.as_deref(), Some("2.7"));
        assert_eq!(Meta::parse("5 0 1 -").unwrap().receipt, None);
        assert_eq!(Meta::parse("5 0 1"), None);
    }
}
