//! Pure flash-sale rules: order ids and cursors, voucher status.

use std::fmt;
use std::str::FromStr;

/// Where an order sits in its voucher's sale order: a Redis stream entry id (`<ms>-<seq>`).
/// The memory backend mints the same shape, so cursors and order ids look alike everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seq {
    /// Store time of the sale, unix milliseconds (never goes backwards within a voucher).
    pub ms: u64,
    /// Tie-breaker among sales in the same millisecond.
    pub n: u64,
}

impl Seq {
    /// The next id after `last` at store time `now_ms`, as Redis's `XADD *` mints it.
    pub fn next(last: Option<Seq>, now_ms: u64) -> Seq {
        match last {
            Some(l) if l.ms >= now_ms => Seq {
                ms: l.ms,
                n: l.n + 1,
            },
            _ => Seq { ms: now_ms, n: 0 },
        }
    }
}

impl Seq {
    /// The smallest id after this one; `None` for the largest id there can be (so a cursor
    /// that names it is out of range, not an overflow).
    pub fn successor(self) -> Option<Seq> {
        match self.n.checked_add(1) {
            Some(n) => Some(Seq { ms: self.ms, n }),
            None => Some(Seq {
                ms: self.ms.checked_add(1)?,
                n: 0,
            }),
        }
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.n)
    }
}

impl FromStr for Seq {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("not a cursor: {:?}", s.chars().take(40).collect::<String>());
        let (ms, n) = s.split_once('-').ok_or_else(bad)?;
        let digits =
            |p: &str| !p.is_empty() && p.len() <= 20 && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(ms) || !digits(n) {
            return Err(bad());
        }
        Ok(Seq {
            ms: ms.parse().map_err(|_| bad())?,
            n: n.parse().map_err(|_| bad())?,
        })
    }
}

/// Where a voucher stands at a given store time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Active,
    Ended,
    SoldOut,
}

impl Status {
    /// The window decides first (a sale that has not begun is pending even with no stock),
    /// then the stock.
    pub fn at(now_ms: i64, begin_ms: i64, end_ms: i64, stock: u64) -> Status {
        if now_ms < begin_ms {
            Status::Pending
        } else if now_ms >= end_ms {
            Status::Ended
        } else if stock == 0 {
            Status::SoldOut
        } else {
            Status::Active
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Active => "active",
            Status::Ended => "ended",
            Status::SoldOut => "sold_out",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seqs_parse_and_print() {
        let s: Seq = "1763725000123-7".parse().unwrap();
        assert_eq!(
            s,
            Seq {
                ms: 1_763_725_000_123,
                n: 7
            }
        );
        assert_eq!(s.to_string(), "1763725000123-7");
        for bad in [
            "", "-", "1-", "-1", "1", "a-1", "1-b", "1-2-3", " 1-2", "1-+2",
        ] {
            assert!(bad.parse::<Seq>().is_err(), "{bad:?}");
        }
        assert!("1-99999999999999999999999".parse::<Seq>().is_err());
    }

    #[test]
    fn seqs_never_go_backwards() {
        let a = Seq::next(None, 100);
        assert_eq!(a, Seq { ms: 100, n: 0 });
        let b = Seq::next(Some(a), 100);
        assert_eq!(b, Seq { ms: 100, n: 1 });
        let c = Seq::next(Some(b), 90);
        assert_eq!(c, Seq { ms: 100, n: 2 });
        assert!(a < b && b < c);
        assert_eq!(Seq::next(Some(c), 101), Seq { ms: 101, n: 0 });
    }

    #[test]
    fn status_window_first_then_stock() {
        assert_eq!(Status::at(5, 10, 20, 0), Status::Pending);
        assert_eq!(Status::at(10, 10, 20, 3), Status::Active);
        assert_eq!(Status::at(15, 10, 20, 0), Status::SoldOut);
        assert_eq!(Status::at(20, 10, 20, 3), Status::Ended);
        assert_eq!(Status::at(25, 10, 20, 0), Status::Ended);
    }
}
