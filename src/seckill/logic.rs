//! Pure flash-sale rules: order ids and cursors, voucher status.

use std::fmt;
use std::str::FromStr;

use crate::types::Name;

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

/// Which vouchers a listing keeps, by their [`Status`]: what a sale page shows as coming,
/// on sale, and over. A sold-out voucher is over for a buyer (nothing is left to buy) though
/// its window is open, so it is listed as `ended`; a restock puts it back on sale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = VoucherPhase)]
pub enum Phase {
    /// `pending`: the sale has not begun.
    Upcoming,
    /// `active`: on sale, with stock left.
    Active,
    /// `ended` or `sold_out`: nothing can be bought now.
    Ended,
}

/// How far the clocks that decide a voucher's status may disagree (on a Cluster each voucher's
/// status is read on its own node, the index is read on another): a listing filtered by status
/// reads this much past the index's "now" either way, then keeps what each voucher's own read
/// says, so a voucher at the edge of its window is never lost between two clocks.
pub const CLOCK_SLACK_MS: i64 = 60_000;

impl Phase {
    pub fn holds(self, status: Status) -> bool {
        matches!(
            (self, status),
            (Phase::Upcoming, Status::Pending)
                | (Phase::Active, Status::Active)
                | (Phase::Ended, Status::Ended | Status::SoldOut)
        )
    }

    /// The earliest `begin` a voucher of this phase can have at store time `now_ms` (an
    /// upcoming one begins later), with [`CLOCK_SLACK_MS`] to spare.
    pub fn first_begin(self, now_ms: i64) -> Option<i64> {
        (self == Phase::Upcoming).then(|| now_ms.saturating_sub(CLOCK_SLACK_MS))
    }

    /// The latest `begin` a voucher of this phase can have at `now_ms` (an active or ended one
    /// has begun), with [`CLOCK_SLACK_MS`] to spare.
    pub fn last_begin(self, now_ms: i64) -> Option<i64> {
        (self != Phase::Upcoming).then(|| now_ms.saturating_add(CLOCK_SLACK_MS))
    }
}

/// Where a voucher sits in the listing of vouchers: by `begin`, then by id. It is the
/// listing's cursor too (`<begin ms>~<id>`: `~` is in no id).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listed {
    pub begin_ms: i64,
    pub voucher: Name,
}

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}~{}", self.begin_ms, self.voucher)
    }
}

impl FromStr for Listed {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("not a cursor: {:?}", s.chars().take(40).collect::<String>());
        let (begin, id) = s.split_once('~').ok_or_else(bad)?;
        let digits = begin.strip_prefix('-').unwrap_or(begin);
        if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        Ok(Listed {
            begin_ms: begin.parse().map_err(|_| bad())?,
            voucher: Name::try_from(id.to_owned()).map_err(|_| bad())?,
        })
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

    #[test]
    fn phases_sort_the_statuses() {
        use Status::*;
        let holds = |p: Phase| -> Vec<Status> {
            [Pending, Active, Ended, SoldOut]
                .into_iter()
                .filter(|s| p.holds(*s))
                .collect()
        };
        assert_eq!(holds(Phase::Upcoming), [Pending]);
        assert_eq!(holds(Phase::Active), [Active]);
        assert_eq!(holds(Phase::Ended), [Ended, SoldOut]);
        assert_eq!(Phase::Upcoming.first_begin(100_000), Some(40_000));
        assert_eq!(Phase::Upcoming.last_begin(100_000), None);
        assert_eq!(Phase::Ended.last_begin(100_000), Some(160_000));
        assert_eq!(Phase::Active.first_begin(100_000), None);
    }

    #[test]
    fn listing_cursors_parse_and_print() {
        let at: Listed = "-1500~v.1:a".parse().unwrap();
        assert_eq!((at.begin_ms, at.voucher.as_str()), (-1500, "v.1:a"));
        assert_eq!(at.to_string(), "-1500~v.1:a");
        for bad in [
            "",
            "~",
            "1~",
            "~v",
            "x~v",
            "1~a b",
            "1-v",
            "--1~v",
            "1234567890123456789~v",
        ] {
            assert!(bad.parse::<Listed>().is_err(), "{bad:?}");
        }
    }
}
