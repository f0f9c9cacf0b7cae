//! Recording a check-in: on a single Redis, the check-ins a worker takes up in one turn go
//! as one `checkin_set_many.lua` call (every key in one slot, the cohort chunk included); on a
//! Cluster, `checkin_set.lua` on the user's months beside `cohort_set.lua` on the day's chunk.
//! A streak longer than the months sent goes on in one more call.

use std::sync::LazyLock;

use chrono::Datelike;
use fred::prelude::*;
use fred::types::scripts::Script;

use super::cohort::{chunk_of, COHORT_SET, COHORT_SPARSE_MAX};
use crate::store::keys::Keys;
use crate::store::redis::script_after;
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::Slot;

use crate::checkins::Calendar;
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::types::{Day, Month, UserId};

static CHECKIN_SET: LazyLock<Script> = script_after!("checkin_common.lua", "checkin_set.lua");
static CHECKIN_SET_MANY: LazyLock<Script> =
    script_after!("checkin_common.lua", "checkin_set_many.lua");

/// Months a check-in's call reads for the streak, today's included, unless it writes an older
/// one: enough for any streak up to 29 days (more past the first of a month).
const FIRST_MONTHS: usize = 2;

/// Most check-ins in one `checkin_set_many.lua` call, and the month keys after which a call
/// takes no more: bounds the script's work, since a check-in's streak walk reads up to a
/// month's days per month key (128 months: at most ~4,000 GETBITs, about a millisecond of
/// Redis). A larger group goes as several calls, one after the other.
const MAX_GROUP: usize = 64;
const MAX_GROUP_MONTHS: usize = 128;

/// Check-ins waiting to go in one call, per calendar.
pub(super) static GROUPS: Slot<Checkins> = Slot::new();

/// Check-ins on a single Redis, grouped per calendar (today, retention days): the check-ins a
/// worker takes up in one turn cost one round trip and one script run. Each
/// answers `checkin()`'s `{ previous, month count, streak, budget }`.
pub(super) type Checkins = GroupCommit<(Day, u32), Plan, Result<[i64; 4], StoreError>>;

/// One check-in's share of a script call.
pub(super) struct Plan {
    /// The user's months up to the written one and at least the one before today's: a streak
    /// longer than that is rare, and continues in a second call with the older months (each
    /// key and integer costs the gateway more to encode than Redis to run).
    pub(super) months: Vec<String>,
    /// The day's cohort chunk.
    chunk: String,
    /// n, write, bit, month_at, cohort_bit, day_at, chunk_no (`checkin_common.lua` names them).
    args: [i64; 7],
}

impl Plan {
    pub(super) fn new(
        keys: &Keys,
        user: UserId,
        day: Day,
        cal: &Calendar,
        window: &[Month],
    ) -> Result<Self, StoreError> {
        let expiry = cal.expiry(day);
        let target = window
            .iter()
            .position(|m| *m == day.month())
            .ok_or_else(|| StoreError::Internal("check-in day outside its window".to_owned()))?;
        let (chunk, offset) = chunk_of(user);
        let first = (target + 1).max(FIRST_MONTHS).min(window.len());
        Ok(Self {
            months: keys.checkin_months(user, &window[..first]),
            chunk: keys.cohort_chunk(chunk, day),
            args: [
                first as i64,
                (target + 1) as i64,
                i64::from(day.0.day()) - 1,
                expiry.month_at,
                i64::from(offset),
                expiry.day_at,
                i64::from(chunk),
            ],
        })
    }
}

/// Where a check-in's streak walk starts (today's day of the month) and how many days it may
/// count (the retention): the same for every check-in of a calendar.
fn walk(cal: &Calendar) -> [i64; 2] {
    [
        i64::from(cal.retention.today.0.day()),
        i64::from(cal.retention.days),
    ]
}

/// A group of check-ins in `checkin_set_many.lua` calls of at most [`MAX_GROUP`] check-ins
/// and [`MAX_GROUP_MONTHS`] month keys, in order.
pub(super) async fn record_group(
    store: RedisStore,
    (today, days): (Day, u32),
    plans: Vec<Plan>,
) -> Vec<Result<[i64; 4], StoreError>> {
    let [from, budget] = walk(&Calendar::at(today, days));
    let mut replies = Vec::with_capacity(plans.len());
    for call in group::calls(plans, MAX_GROUP, MAX_GROUP_MONTHS, |p| p.months.len()) {
        let months: usize = call.iter().map(|p| p.months.len()).sum();
        let n = call.len();
        let mut keys = Vec::with_capacity(1 + months + n);
        let mut args = Vec::with_capacity(5 + n * 7);
        keys.push(store.keys.cohort_registry());
        args.extend([
            n as i64,
            from,
            budget,
            COHORT_SPARSE_MAX,
            today.month().serial(),
        ]);
        for plan in call {
            keys.extend(plan.months);
            keys.push(plan.chunk);
            args.extend(plan.args);
        }
        match store
            .pool
            .script::<Vec<Value>, _, _>(&CHECKIN_SET_MANY, keys, args)
            .await
        {
            Ok(reply) if reply.len() == n => replies.extend(reply.into_iter().map(one_of_many)),
            Ok(reply) => replies.extend((0..n).map(|_| {
                Err(StoreError::Internal(format!(
                    "checkin_set_many.lua answered {} of {n} check-ins",
                    reply.len()
                )))
            })),
            Err(e) => replies.extend((0..n).map(|_| Err(e.clone()))),
        }
    }
    replies
}

/// One check-in's answer within `checkin_set_many.lua`'s reply: four integers, or the text of
/// the error it alone ran into.
fn one_of_many(reply: Value) -> Result<[i64; 4], StoreError> {
    let Value::Array(parts) = reply else {
        return Err(StoreError::Internal(format!(
            "checkin_set_many.lua replied {reply:?}"
        )));
    };
    match &parts[..] {
        [a, b, c, d] => match [a.as_i64(), b.as_i64(), c.as_i64(), d.as_i64()] {
            [Some(a), Some(b), Some(c), Some(d)] => Ok([a, b, c, d]),
            _ => Err(StoreError::Internal(format!(
                "checkin_set_many.lua replied {parts:?}"
            ))),
        },
        [text] => Err(map_err(Error::new(
            ErrorKind::Unknown,
            text.as_str().unwrap_or_default().into_owned(),
        ))),
        _ => Err(StoreError::Internal(format!(
            "checkin_set_many.lua replied {parts:?}"
        ))),
    }
}

fn four(reply: Vec<i64>) -> Result<[i64; 4], StoreError> {
    <[i64; 4]>::try_from(reply)
        .map_err(|r| StoreError::Internal(format!("checkin_set.lua replied {r:?}")))
}

impl RedisStore {
    /// A check-in on a Cluster: the user's months and the day's cohort chunk live in different
    /// slots, so the chunk gets its own script, sent concurrently.
    pub(super) async fn checkin_cluster(
        &self,
        cal: &Calendar,
        window: &[Month],
        plan: Plan,
    ) -> Result<[i64; 4], StoreError> {
        let [n, write, bit, month_at, cohort_bit, day_at, chunk] = plan.args;
        let [from, budget] = walk(cal);
        let args: Vec<i64> = vec![n, write, bit, month_at, from, budget, window[0].serial()];
        let user_call = self
            .pool
            .script::<Vec<i64>, _, _>(&CHECKIN_SET, plan.months, args);
        let cohort_call = self.pool.script::<i64, _, _>(
            &COHORT_SET,
            vec![plan.chunk],
            vec![cohort_bit, day_at, COHORT_SPARSE_MAX],
        );
        let (reply, existed) = tokio::try_join!(user_call, cohort_call)?;
        self.register_chunk(chunk as u32, existed != 0).await?;
        four(reply)
    }

    /// The rest of a streak that went on past the months of a check-in's call: counted back
    /// from the last day of `months[0]`, at most `budget` days, in one more call.
    pub(super) async fn streak_on(
        &self,
        user: UserId,
        months: &[Month],
        budget: i64,
    ) -> Result<i64, StoreError> {
        let keys = self.keys.checkin_months(user, months);
        // No write; the walk starts at the month's last day (from = 0).
        let args: Vec<i64> = vec![keys.len() as i64, 0, 0, 0, 0, budget, months[0].serial()];
        let reply: Vec<i64> = self.pool.script(&CHECKIN_SET, keys, args).await?;
        Ok(four(reply)?[2])
    }
}
