//! Check-ins on Redis bitmaps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use chrono::Datelike;
use fred::prelude::*;
use fred::types::scripts::Script;
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::store::keys::{day_str, Keys};
use crate::store::redis::script_after;
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::checkins::{logic, Calendar, CheckIn, CheckinStore, Cohort};
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::types::{Day, Month, UserId};

static CHECKIN_SET: LazyLock<Script> = script_after!("checkin_common.lua", "checkin_set.lua");
static CHECKIN_SET_MANY: LazyLock<Script> =
    script_after!("checkin_common.lua", "checkin_set_many.lua");
static COHORT_SET: LazyLock<Script> = script_after!("checkin_common.lua", "cohort_set.lua");
static COHORT_GET: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("cohort_get.lua")));

/// Most users a day's chunk keeps as a set of offsets before it becomes a bitmap. 512 is
/// Redis's default `set-max-intset-entries`, so a sparse chunk stays an intset (4 bytes per
/// user), and a bitmap (at most 128 KiB) is only made for more than 512 users: a sparse or
/// hostile user id costs a few bytes, never 128 KiB (issue 15, "Abuse budget" in README).
const COHORT_SPARSE_MAX: i64 = 512;

/// Months a check-in's call reads for the streak, today's included, unless it writes an older
/// one: enough for any streak up to 29 days (more past the first of a month).
const FIRST_MONTHS: usize = 2;

/// Most check-ins in one `checkin_set_many.lua` call, and the month keys after which a call
/// takes no more: bounds the script's work, since a check-in's streak walk reads up to a
/// month's days per month key (128 months: at most ~4,000 GETBITs, about a millisecond of
/// Redis). A larger group goes as several calls, one after the other.
const MAX_GROUP: usize = 64;
const MAX_GROUP_MONTHS: usize = 128;

/// Chunks fetched at once when computing stats: bounds memory to a few chunks' worth of days.
const CHUNKS_IN_FLIGHT: usize = 4;

/// On a Cluster, which cohort chunks this process has already added to the registry, so that
/// extra write happens once per chunk per process (and again whenever a chunk key is newly
/// created, which re-registers after Redis lost its data). On a single Redis the check-in
/// script registers the chunk itself.
#[derive(Debug)]
struct KnownChunks([AtomicU64; 64]);

impl Default for KnownChunks {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl Kept for KnownChunks {}

static CHUNKS: Slot<KnownChunks> = Slot::new();

/// Check-ins waiting to go in one call, per calendar.
static GROUPS: Slot<Checkins> = Slot::new();

impl KnownChunks {
    fn contains(&self, chunk: u32) -> bool {
        self.0[(chunk / 64) as usize].load(Ordering::Relaxed) & (1 << (chunk % 64)) != 0
    }

    fn insert(&self, chunk: u32) {
        self.0[(chunk / 64) as usize].fetch_or(1 << (chunk % 64), Ordering::Relaxed);
    }
}

fn chunk_of(user: UserId) -> (u32, u32) {
    (
        user.0 >> COHORT_CHUNK_BITS,
        user.0 & ((1 << COHORT_CHUNK_BITS) - 1),
    )
}

fn bytes_of(v: &Value) -> &[u8] {
    match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.as_bytes(),
        _ => &[],
    }
}

/// Check-ins on a single Redis, grouped per calendar (today, retention days): the check-ins a
/// worker takes up in one turn cost one round trip and one script run (issue 19). Each
/// answers `checkin()`'s `{ previous, month count, streak, budget }`.
type Checkins = GroupCommit<(Day, u32), Plan, Result<[i64; 4], StoreError>>;

/// One check-in's share of a script call.
pub(super) struct Plan {
    /// The user's months up to the written one and at least the one before today's: a streak
    /// longer than that is rare, and continues in a second call with the older months (each
    /// key and integer costs the gateway more to encode than Redis to run).
    months: Vec<String>,
    /// The day's cohort chunk.
    chunk: String,
    /// n, write, bit, month_at, cohort_bit, day_at, chunk_no (`checkin_common.lua` names them).
    args: [i64; 7],
}

impl Plan {
    fn new(
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
async fn record_group(
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
            .eval::<Vec<Value>, _, _>(&CHECKIN_SET_MANY, keys, args)
            .await
        {
            Ok(reply) if reply.len() == n => replies.extend(reply.into_iter().map(one_of_many)),
            Ok(reply) => replies.extend((0..n).map(|_| {
                Err(StoreError::Internal(format!(
                    "checkin_set_many.lua answered {} of {n} check-ins",
                    reply.len()
                )))
            })),
            Err(e) => {
                let e = map_err(e);
                replies.extend((0..n).map(|_| Err(e.clone())));
            }
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

    /// Fetches each registered chunk's days (bitmaps ≤ 128 KiB or ≤ 512 offsets each, a few
    /// chunks at a time)
    /// and combines them here: no long-running BITOP on a huge key, no cross-slot command.
    async fn checkin_cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        let chunks: Vec<i64> = self
            .pool
            .at(&self.keys.cohort_registry())
            .map_err(map_err)?
            .smembers(self.keys.cohort_registry())
            .await
            .map_err(map_err)?;
        let partials: Vec<Cohort> = stream::iter(chunks)
            .map(|chunk| self.chunk_cohort(chunk as u32, days))
            .buffer_unordered(CHUNKS_IN_FLIGHT)
            .try_collect()
            .await?;
        let mut total = Cohort {
            daily: vec![0; days.len()],
            ..Cohort::default()
        };
        for p in partials {
            for (t, d) in total.daily.iter_mut().zip(&p.daily) {
                *t += d;
            }
            total.every_day += p.every_day;
            total.any_day += p.any_day;
        }
        Ok(total)
    }
}

impl RedisStore {
    /// A check-in on a Cluster: the user's months and the day's cohort chunk live in different
    /// slots, so the chunk gets its own script, sent concurrently.
    async fn checkin_cluster(
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
            .eval::<Vec<i64>, _, _>(&CHECKIN_SET, plan.months, args);
        let cohort_call = self.pool.eval::<i64, _, _>(
            &COHORT_SET,
            vec![plan.chunk],
            vec![cohort_bit, day_at, COHORT_SPARSE_MAX],
        );
        let (reply, existed) = tokio::try_join!(user_call, cohort_call).map_err(map_err)?;
        let chunk = chunk as u32;
        if existed == 0 || !self.kept(&CHUNKS).contains(chunk) {
            let _: i64 = self
                .pool
                .at(&self.keys.cohort_registry())
                .map_err(map_err)?
                .sadd(self.keys.cohort_registry(), i64::from(chunk))
                .await
                .map_err(map_err)?;
            self.kept(&CHUNKS).insert(chunk);
        }
        four(reply)
    }

    /// The rest of a streak that went on past the months of a check-in's call: counted back
    /// from the last day of `months[0]`, at most `budget` days, in one more call.
    async fn streak_on(
        &self,
        user: UserId,
        months: &[Month],
        budget: i64,
    ) -> Result<i64, StoreError> {
        let keys = self.keys.checkin_months(user, months);
        // No write; the walk starts at the month's last day (from = 0).
        let args: Vec<i64> = vec![keys.len() as i64, 0, 0, 0, 0, budget, months[0].serial()];
        let reply: Vec<i64> = self
            .pool
            .eval(&CHECKIN_SET, keys, args)
            .await
            .map_err(map_err)?;
        Ok(four(reply)?[2])
    }

    async fn chunk_cohort(&self, chunk: u32, days: &[Day]) -> Result<Cohort, StoreError> {
        let gets = days.iter().map(|d| {
            let key = self.keys.cohort_chunk(chunk, *d);
            async move {
                self.pool
                    .eval::<Vec<Value>, _, _>(&COHORT_GET, key, ())
                    .await
            }
        });
        let values = futures::future::try_join_all(gets).await.map_err(map_err)?;
        let owned: Vec<Vec<u8>> = values
            .into_iter()
            .map(chunk_bitmap)
            .collect::<Result<_, _>>()?;
        let bitmaps: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let daily = bitmaps.iter().map(|b| popcount(b)).collect();
        let longest = bitmaps.iter().map(|b| b.len()).max().unwrap_or(0);
        let shortest = bitmaps.iter().map(|b| b.len()).min().unwrap_or(0);
        let (mut every, mut any) = (0u64, 0u64);
        for i in 0..longest {
            let (mut and, mut or) = (0xffu8, 0u8);
            for b in &bitmaps {
                let byte = b.get(i).copied().unwrap_or(0);
                and &= byte;
                or |= byte;
            }
            if i < shortest {
                every += u64::from(and.count_ones());
            }
            any += u64::from(or.count_ones());
        }
        Ok(Cohort {
            daily,
            every_day: every,
            any_day: any,
        })
    }
}

/// A chunk as `cohort_get.lua` replies it, as bitmap bytes in Redis's bit order (offset 0 is
/// the high bit of byte 0), whichever form it is stored in.
fn chunk_bitmap(reply: Vec<Value>) -> Result<Vec<u8>, StoreError> {
    let bad = || StoreError::Internal("cohort_get.lua replied an unknown form".to_owned());
    let mut parts = reply.into_iter();
    match parts.next().and_then(|v| v.as_i64()) {
        Some(0) => Ok(parts
            .next()
            .map(|v| bytes_of(&v).to_vec())
            .unwrap_or_default()),
        Some(1) => {
            let offsets: Vec<u32> = parts
                .map(|v| {
                    let n = v
                        .as_u64()
                        .or_else(|| std::str::from_utf8(bytes_of(&v)).ok()?.parse().ok());
                    n.and_then(|o| u32::try_from(o).ok()).ok_or_else(bad)
                })
                .collect::<Result<_, _>>()?;
            let len = offsets.iter().max().map_or(0, |m| *m as usize / 8 + 1);
            let mut bytes = vec![0u8; len];
            for o in offsets {
                bytes[o as usize / 8] |= 0x80 >> (o % 8);
            }
            Ok(bytes)
        }
        _ => Err(bad()),
    }
}

fn popcount(bytes: &[u8]) -> u64 {
    bytes.iter().map(|b| u64::from(b.count_ones())).sum()
}

/// Users per cohort chunk: 2^20 bits = at most 128 KiB per chunk key, so a check-in by user
/// 4294967295 allocates one chunk, not a 512 MiB string (and a chunk with few users stays a
/// small set of offsets: `cohort_set.lua`).
const COHORT_CHUNK_BITS: u32 = 20;

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
