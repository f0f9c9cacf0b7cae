//! Check-ins in memory: month masks per user and one roaring bitmap per day for cohorts.

use std::collections::HashMap;

use chrono::Datelike;
use roaring::RoaringBitmap;

use crate::checkins::{Calendar, CheckIn, CheckinStore, Cohort};
use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::{Day, Month, UserId};

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

#[derive(Debug, Default)]
struct State {
    /// (user, month) → (mask with bit `day - 1`, expires at unix s).
    months: HashMap<(u32, Month), (u32, i64)>,
    /// day → (users checked in, expires at unix s).
    days: HashMap<Day, (RoaringBitmap, i64)>,
}

impl Purge for State {
    fn purge(&mut self, now: i64) {
        reclaim(&mut self.months, |_, (_, at)| *at > now);
        reclaim(&mut self.days, |_, (_, at)| *at > now);
    }
}

impl CheckinStore for MemoryStore {
    async fn checkin_record(
        &self,
        user: UserId,
        day: Day,
        cal: &Calendar,
    ) -> Result<CheckIn, StoreError> {
        let expiry = cal.expiry(day);
        let window = cal.window();
        let mut s = self.state(&STATE);
        let bit = 1u32 << (day.0.day() - 1);
        let entry = s
            .months
            .entry((user.0, day.month()))
            .or_insert((0, expiry.month_at));
        let already = entry.0 & bit != 0;
        entry.0 |= bit;
        entry.1 = expiry.month_at;
        let cohort = s
            .days
            .entry(day)
            .or_insert_with(|| (RoaringBitmap::new(), expiry.day_at));
        cohort.0.insert(user.0);
        cohort.1 = expiry.day_at;
        let months: Vec<u32> = window.iter().map(|m| mask(&s, user, *m)).collect();
        Ok(CheckIn {
            already,
            month_count: mask(&s, user, day.month()).count_ones(),
            current_streak: cal.current_streak(&window, &months),
        })
    }

    async fn checkin_months(&self, user: UserId, months: &[Month]) -> Result<Vec<u32>, StoreError> {
        let s = self.state(&STATE);
        Ok(months.iter().map(|m| mask(&s, user, *m)).collect())
    }

    async fn checkin_cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        let s = self.state(&STATE);
        let empty = RoaringBitmap::new();
        let maps: Vec<&RoaringBitmap> = days
            .iter()
            .map(|d| s.days.get(d).map_or(&empty, |(b, _)| b))
            .collect();
        let daily = maps.iter().map(|b| b.len()).collect();
        let mut every = maps.first().map(|b| (*b).clone()).unwrap_or_default();
        let mut any = RoaringBitmap::new();
        for b in &maps {
            every &= *b;
            any |= *b;
        }
        Ok(Cohort {
            daily,
            every_day: every.len(),
            any_day: any.len(),
        })
    }
}

fn mask(s: &State, user: UserId, month: Month) -> u32 {
    s.months.get(&(user.0, month)).map_or(0, |(m, _)| *m)
}
