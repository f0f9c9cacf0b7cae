//! Calendar days and months as the API writes them (`YYYY-MM-DD`, `YYYY-MM`): parsed at the
//! edge, and written back digit by digit for keys and replies.

use std::fmt;

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

/// A calendar day, written `YYYY-MM-DD` (years 1970–9999).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Day(pub NaiveDate);

impl Day {
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("dates are YYYY-MM-DD, got {s:?}");
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return Err(bad());
        }
        // By hand rather than `parse_from_str("%Y-%m-%d")`, which interprets the pattern on
        // every call: a day is parsed on every page view.
        let number = |digits: &[u8]| {
            digits.iter().try_fold(0u32, |n, d| {
                d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
            })
        };
        let (Some(year), Some(month), Some(day)) =
            (number(&b[..4]), number(&b[5..7]), number(&b[8..]))
        else {
            return Err(bad());
        };
        if year < 1970 {
            return Err(bad());
        }
        let date = i32::try_from(year)
            .ok()
            .and_then(|y| NaiveDate::from_ymd_opt(y, month, day))
            .ok_or_else(bad)?;
        Ok(Self(date))
    }

    pub fn month(self) -> Month {
        Month::of(self.0)
    }

    /// Days since 1970-01-01.
    pub fn ordinal(self) -> i64 {
        (self.0 - NaiveDate::from_ymd_opt(1970, 1, 1).expect("valid")).num_days()
    }

    pub fn succ(self) -> Day {
        Day(self
            .0
            .succ_opt()
            .expect("year 9999 is never reached in practice"))
    }

    pub fn pred(self) -> Day {
        Day(self
            .0
            .pred_opt()
            .expect("year 1970 minus one is representable"))
    }
}

impl TryFrom<String> for Day {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s)
    }
}

/// The decimal digit of `n` at `place` (1, 10, 100, …) in ASCII: `Day` and `Month` write
/// their text digit by digit.
fn digit(n: u32, place: u32) -> u8 {
    b'0' + u8::try_from(n / place % 10).unwrap_or(0)
}

impl Day {
    /// `YYYY-MM-DD`, digit by digit rather than `write!("{:04}-{:02}-{:02}")` (and never
    /// chrono's `format`, which re-parses its pattern): days go into keys and replies on every
    /// request.
    pub fn text(self) -> [u8; 10] {
        let (y, m, d) = (
            u32::try_from(self.0.year()).unwrap_or(0),
            self.0.month(),
            self.0.day(),
        );
        [
            digit(y, 1000),
            digit(y, 100),
            digit(y, 10),
            digit(y, 1),
            b'-',
            digit(m, 10),
            digit(m, 1),
            b'-',
            digit(d, 10),
            digit(d, 1),
        ]
    }
}

impl fmt::Display for Day {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.text()).map_err(|_| fmt::Error)?)
    }
}

impl Serialize for Day {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.text();
        serializer.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
    }
}

/// A calendar month, written `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Month {
    year: i32,
    month: u32,
}

impl Month {
    pub fn of(date: NaiveDate) -> Self {
        Self {
            year: date.year(),
            month: date.month(),
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("months are YYYY-MM, got {s:?}");
        let b = s.as_bytes();
        if b.len() != 7
            || b[4] != b'-'
            || !s[..4]
                .bytes()
                .chain(s[5..].bytes())
                .all(|c| c.is_ascii_digit())
        {
            return Err(bad());
        }
        let year: i32 = s[..4].parse().map_err(|_| bad())?;
        let month: u32 = s[5..].parse().map_err(|_| bad())?;
        if !(1970..=9999).contains(&year) || !(1..=12).contains(&month) {
            return Err(bad());
        }
        Ok(Self { year, month })
    }

    /// `YYYY-MM`, digit by digit: a check-in writes a key for every retained month, and
    /// `core::fmt` with a `NaiveDate` behind it cost more than the rest of the key.
    pub fn text(self) -> [u8; 7] {
        let y = u32::try_from(self.year).unwrap_or(0);
        [
            digit(y, 1000),
            digit(y, 100),
            digit(y, 10),
            digit(y, 1),
            b'-',
            digit(self.month, 10),
            digit(self.month, 1),
        ]
    }

    /// Months since year 0 (`year * 12 + month - 1`): consecutive months are consecutive
    /// numbers, and the year and month come back by division (as `checkin_set.lua` does).
    pub fn serial(self) -> i64 {
        i64::from(self.year) * 12 + i64::from(self.month) - 1
    }

    pub fn first_day(self) -> Day {
        Day(NaiveDate::from_ymd_opt(self.year, self.month, 1).expect("validated month"))
    }

    pub fn days(self) -> u32 {
        let next = self.next().first_day().0;
        (next - self.first_day().0).num_days() as u32
    }

    pub fn next(self) -> Month {
        if self.month == 12 {
            Month {
                year: self.year + 1,
                month: 1,
            }
        } else {
            Month {
                year: self.year,
                month: self.month + 1,
            }
        }
    }

    pub fn prev(self) -> Month {
        if self.month == 1 {
            Month {
                year: self.year - 1,
                month: 12,
            }
        } else {
            Month {
                year: self.year,
                month: self.month - 1,
            }
        }
    }

    pub fn day(self, d: u32) -> Day {
        Day(NaiveDate::from_ymd_opt(self.year, self.month, d).expect("day within month"))
    }
}

impl TryFrom<String> for Month {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s)
    }
}

impl From<Month> for String {
    fn from(m: Month) -> String {
        m.to_string()
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.text()).map_err(|_| fmt::Error)?)
    }
}
