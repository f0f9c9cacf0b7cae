//! Check-ins on Redis bitmaps: a user's months (`ck:{user}:<month>`, bit `day - 1`) and, per
//! day, the cohort of users who checked in, in chunks (`ckd:{chunk}:<day>`).
//!
//! Here: the store trait; `record.rs`: recording check-ins and their streaks; `cohort.rs`: the
//! cohort chunks and their stats; `wire.rs`: the keys and the reading of bitmaps, which all
//! share.

mod cohort;
mod record;
mod wire;

use fred::prelude::*;

use crate::store::redis::{map_err, RedisStore};

use crate::checkins::{logic, Calendar, CheckIn, CheckinStore, Cohort};
use crate::store::error::StoreError;
use crate::types::{Day, Month, UserId};
use record::{record_group, Plan, GROUPS};
use wire::bytes_of;

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
