//! Days as the gateway sees them, for the domains that keep per-day data (check-ins, unique
//! visitors): a retention window that decides which days may be written and when their keys
//! expire, and bounded inclusive ranges of days.

use chrono::{Duration, NaiveTime};

use crate::clock::Clock;
use crate::types::{Day, Refused};

/// Today in `tz`, by `clock`: the day a per-day route writes when the request names none.
pub(crate) fn today(clock: &Clock, tz: chrono_tz::Tz) -> Day {
    Day(clock.now_utc().with_timezone(&tz).date_naive())
}

/// The last `days` days ending `today` (today included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    pub today: Day,
    pub days: u32,
    /// What is retained, for error messages ("check-in", "unique-visitor").
    what: &'static str,
}

impl Retention {
    pub fn new(today: Day, days: u32, what: &'static str) -> Self {
        Self { today, days, what }
    }

    /// The oldest day still retained.
    pub fn oldest(&self) -> Day {
        Day(self.today.0 - Duration::days(i64::from(self.days) - 1))
    }

    /// Whether `day` may be written: not in the future, not past retention.
    pub fn contains(&self, day: Day) -> bool {
        day <= self.today && day >= self.oldest()
    }

    /// Refuses days in the future or past retention with 422.
    pub fn writable(&self, day: Day) -> Result<(), Refused> {
        if day > self.today {
            return Err(Refused::Unprocessable(format!(
                "{day} is in the future (today is {})",
                self.today
            )));
        }
        if day < self.oldest() {
            return Err(Refused::Unprocessable(format!(
                "{day} is older than the {} retention of {} days",
                self.what, self.days
            )));
        }
        Ok(())
    }

    /// Unix time at which keys holding `day` expire: once the day leaves retention, with a day
    /// of slack for time zones.
    pub fn expire_at(&self, day: Day) -> i64 {
        let keep = Duration::days(i64::from(self.days) + 1);
        (day.0 + keep)
            .and_time(NaiveTime::MIN)
            .and_utc()
            .timestamp()
    }
}

/// The days `from..=to`, refusing a backwards range or one longer than `max_days` with 400.
pub(crate) fn days_between(from: Day, to: Day, max_days: i64) -> Result<Vec<Day>, Refused> {
    if to < from {
        return Err(Refused::Invalid(format!(
            "to ({to}) is before from ({from})"
        )));
    }
    let len = (to.0 - from.0).num_days() + 1;
    if len > max_days {
        return Err(Refused::Invalid(format!(
            "a range is at most {max_days} days, got {len}"
        )));
    }
    Ok((0..len).map(|i| Day(from.0 + Duration::days(i))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::testing::day;

    #[test]
    fn retention_window() {
        let r = Retention::new(day("2026-11-21"), 2, "test");
        assert!(r.contains(day("2026-11-21")));
        assert!(r.contains(day("2026-11-20")));
        assert!(!r.contains(day("2026-11-19")));
        assert!(!r.contains(day("2026-11-22")));
        assert_eq!(
            r.expire_at(day("2026-11-20")),
            day("2026-11-23")
                .0
                .and_time(NaiveTime::MIN)
                .and_utc()
                .timestamp()
        );
        assert!(matches!(
            r.writable(day("2026-11-22")),
            Err(Refused::Unprocessable(_))
        ));
        assert!(matches!(
            r.writable(day("2026-11-19")),
            Err(Refused::Unprocessable(_))
        ));
    }

    #[test]
    fn ranges_are_inclusive_and_bounded() {
        assert_eq!(
            days_between(day("2026-01-01"), day("2026-01-01"), 1)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            days_between(day("2024-01-01"), day("2024-12-31"), 366)
                .unwrap()
                .len(),
            366
        );
        assert!(days_between(day("2024-01-01"), day("2024-12-31"), 365).is_err());
        assert!(days_between(day("2026-01-02"), day("2026-01-01"), 92).is_err());
    }
}
