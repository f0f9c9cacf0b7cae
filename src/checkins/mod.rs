//! Daily check-ins on bitmaps: check in, the month calendar with streaks, one day, and cohort
//! stats over a range (daily counts, every-day AND, any-day OR).
//!
//! Per user, one bitmap per month (`ck:{user}:YYYY-MM`, bit = day - 1), so a user's history
//! shares a slot and a streak is one read. Per day, a cohort bitmap (offset = user id) split
//! into 2^20-user chunks so memory follows real users and no command touches a huge string; a
//! chunk with few users is kept as a set of offsets until it is worth a bitmap (Redis backend).

mod http;
pub mod logic;
mod memory;
mod redis;
mod settings;

use std::collections::HashMap;

use chrono::Duration;

pub use http::{CheckinsState, Domain};
pub use settings::{Flags, Settings};

use crate::calendar::Retention;
use crate::store::error::StoreError;
use crate::types::{Day, Month, UserId};

/// Longest stats range, in days (docs/api.md).
pub const MAX_STATS_DAYS: i64 = 92;

/// Outcome of a check-in as the store reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckIn {
    pub already: bool,
    /// Days checked in during the day's month, this one included.
    pub month_count: u32,
    /// Consecutive days ending today (or yesterday), per [`logic::current_streak`].
    pub current_streak: u32,
}

/// Counts over a range of days.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cohort {
    /// Users checked in on each day, in the order asked.
    pub daily: Vec<u64>,
    /// Users checked in on every day (AND).
    pub every_day: u64,
    /// Users checked in on at least one day (OR).
    pub any_day: u64,
}

/// When keys written by a check-in expire (unix seconds).
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    pub month_at: i64,
    pub day_at: i64,
}

crate::store::store_trait! {
    /// What a check-in backend must do. Every method is one logical store operation.
    pub(crate) trait CheckinStore {
        /// Sets `user`'s bit for `day` (in its own month bitmap and in the day's cohort), then
        /// reports whether it was set before, the month's count and the current streak as of
        /// `cal.today` — computed next to the data, so a check-in moves three numbers, not a year of
        /// bitmaps. `day` must be writable (see [`Calendar::writable`]).
        async fn checkin_record(&self, user: UserId, day: Day, cal: &Calendar)
            -> Result<CheckIn, StoreError> = "checkins.check_in";
        /// Bitmasks of `months` for `user`, in order; a missing month is 0.
        async fn checkin_months(&self, user: UserId, months: &[Month]) -> Result<Vec<u32>, StoreError> = "checkins.months";
        /// Daily counts, AND and OR over `days` (at most [`MAX_STATS_DAYS`]).
        async fn checkin_cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> = "checkins.cohort";
    }
}

/// Dates and retention as the gateway sees them right now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calendar {
    /// Which days may be checked in, and when their keys expire.
    pub retention: Retention,
}

impl Calendar {
    /// The calendar of `today`, keeping `retention_days` days.
    pub fn at(today: Day, retention_days: u32) -> Self {
        Self {
            retention: Retention::new(today, retention_days, "check-in"),
        }
    }

    /// The months a current streak may span, newest first.
    pub fn window(&self) -> Vec<Month> {
        logic::window(self.retention.today, self.retention.oldest())
    }

    /// A month's bitmap lives until its last day leaves retention, a day's cohort until the day does.
    pub fn expiry(&self, day: Day) -> Expiry {
        let month_end = Day(day.month().next().first_day().0 - Duration::days(1));
        Expiry {
            month_at: self.retention.expire_at(month_end),
            day_at: self.retention.expire_at(day),
        }
    }

    pub fn current_streak(&self, window: &[Month], masks: &[u32]) -> u32 {
        let months: HashMap<Month, u32> =
            window.iter().copied().zip(masks.iter().copied()).collect();
        logic::current_streak(self.retention.today, self.retention.oldest(), &months)
    }
}
