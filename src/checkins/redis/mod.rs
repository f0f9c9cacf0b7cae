//! Check-ins on Redis bitmaps: a user's months (`ck:{user}:<month>`, bit `day - 1`) and, per
//! day, the cohort of users who checked in, in chunks (`ckd:{chunk}:<day>`).
//!
//! Here: the store trait and the keys; `record.rs`: recording check-ins and their streaks;
//! `cohort.rs`: the cohort chunks and their stats.

mod cohort;
mod record;

use fred::prelude::*;

use crate::store::keys::{day_str, Keys};
use crate::store::redis::{map_err, RedisStore};

use crate::checkins::{logic, Calendar, CheckIn, CheckinStore, Cohort};
use crate::store::error::StoreError;
use crate::types::{Day, Month, UserId};
use record::{record_group, Plan, GROUPS};

fn bytes_of(v: &Value) -> &[u8] {
    match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.as_bytes(),
        _ => &[],
    }
}

impl CheckinStore for RedisStore {
    async fn checkin_record(
        &self,
        user: UserId,
        day: Day,
        cal: &Calendar,
    ) -> Result<CheckIn, StoreError> {
        let window = cal.window();
        let plan = Plan::new(&self.keys, user, day, cal, &window)?;
        let first = plan.months.len();
        let reply = if self.cluster {
            self.checkin_cluster(cal, &window, plan).await?
        } else {
            // Every key in one slot: the check-ins of this worker's turn go in one call.
            let key = (cal.retention.today, cal.retention.days);
            match self.kept(&GROUPS).join(key, plan, self, record_group).await {
                Some(reply) => reply?,
                None => {
                    return Err(StoreError::Unavailable(
                        "the gateway is shutting down".to_owned(),
                    ))
                }
            }
        };
        let [previous, month_count, mut current_streak, budget] = reply;
        if budget > 0 && first < window.len() {
            current_streak += self.streak_on(user, &window[first..], budget).await?;
        }
        let count = |n: i64| {
            u32::try_from(n).map_err(|_| StoreError::Internal(format!("checkin_set.lua count {n}")))
        };
        Ok(CheckIn {
            already: previous == 1,
            month_count: count(month_count)?,
            current_streak: count(current_streak)?,
        })
    }

    async fn checkin_months(&self, user: UserId, months: &[Month]) -> Result<Vec<u32>, StoreError> {
        let keys = self.keys.checkin_months(user, months);
        // One MGET: every key carries the user's hash tag, so it is single-slot on a Cluster.
        let values: Vec<Value> = self.pool.mget(keys).await.map_err(map_err)?;
        Ok(values
            .iter()
            .map(|v| logic::mask_from_bytes(bytes_of(v)))
            .collect())
    }

    async fn checkin_cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        self.cohort(days).await
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A user's check-ins for one month: bit `day - 1` is set when checked in.
    #[cfg(test)]
    pub(crate) fn checkin_month(&self, user: UserId, month: Month) -> String {
        self.checkin_months(user, &[month]).remove(0)
    }

    /// [`Self::checkin_month`] of each of `months`, the user's part formatted once: a
    /// check-in names every retained month (issue 19).
    pub(crate) fn checkin_months(&self, user: UserId, months: &[Month]) -> Vec<String> {
        let base = self.join(&["ck:{", itoa::Buffer::new().format(user.0), "}:"]);
        months
            .iter()
            .map(|month| {
                let mut key = String::with_capacity(base.len() + 7);
                key.push_str(&base);
                key.push_str(std::str::from_utf8(&month.text()).unwrap_or_default());
                key
            })
            .collect()
    }

    /// One chunk of a day's cohort bitmap: bit `user mod 2^20` of chunk `user >> 20`.
    /// Tagged by chunk, so the days of a chunk share a slot and a day's chunks spread out.
    pub(crate) fn cohort_chunk(&self, chunk: u32, day: Day) -> String {
        self.join(&[
            "ckd:{",
            itoa::Buffer::new().format(chunk),
            "}:",
            day_str(&day.text()),
        ])
    }

    /// The set of cohort chunk numbers ever written, so stats never scan the keyspace.
    pub(crate) fn cohort_registry(&self) -> String {
        self.join(&["ckr:{chunks}"])
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::hash_tag;

    #[test]
    fn a_users_months_share_a_slot() {
        let keys = Keys::new("gw:");
        let a = keys.checkin_month(UserId(7), Month::parse("2026-01").unwrap());
        let b = keys.checkin_month(UserId(7), Month::parse("2025-12").unwrap());
        assert_eq!(a, "gw:ck:{7}:2026-01");
        assert_eq!(hash_tag(&a), hash_tag(&b));
        assert_ne!(
            hash_tag(&a),
            hash_tag(&keys.checkin_month(UserId(8), Month::parse("2026-01").unwrap()))
        );
    }

    #[test]
    fn a_chunks_days_share_a_slot() {
        let keys = Keys::new("t:");
        let d1 = keys.cohort_chunk(3, Day::parse("2026-01-01").unwrap());
        let d2 = keys.cohort_chunk(3, Day::parse("2026-03-01").unwrap());
        assert_eq!(d1, "t:ckd:{3}:2026-01-01");
        assert_eq!(hash_tag(&d1), hash_tag(&d2));
        assert_eq!(keys.cohort_registry(), "t:ckr:{chunks}");
    }
}
