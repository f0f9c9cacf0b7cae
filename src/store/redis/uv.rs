//! Unique visitors on Redis HyperLogLogs, with page views in counters beside them.
//!
//! A page's keys share its hash tag, so recording and a page's range are one script each.
//! Work across pages (unions, merges) spans slots; it copies HyperLogLogs — plain strings —
//! into scratch keys under one tag and merges there: two waves of pipelined calls, never a
//! cross-slot command.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use fred::bytes::Bytes;
use fred::prelude::*;
use fred::types::scripts::Script;
use futures::stream::{self, StreamExt, TryStreamExt};

use super::{map_err, RedisStore};
use crate::store::error::StoreError;
use crate::types::{Day, Idempotency, Name, Once, IDEMPOTENCY_SECS};
use crate::uv::{FoldDay, PageCounts, Recorded, UvStore};

static RECORD: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("uv_record.lua")));
static RANGE: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("uv_range.lua")));
static COLLAPSE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("uv_collapse.lua")));
static UNION_COUNT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("uv_union_count.lua")));
static FOLD: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("uv_fold.lua")));

/// Scratch keys live this long if a script dies before deleting them.
const SCRATCH_TTL_MS: i64 = 10_000;

/// Page-days collapsed at once in a union. Collapsing a page's year of dense HyperLogLogs
/// costs Redis ~20 ms; queueing 100 of those at once would push the last past the per-command
/// timeout and keep Redis busy in one burst. So short ranges go out all at once (two waves),
/// and long ones a few pages at a time, each call quick.
const PAGE_DAYS_IN_FLIGHT: usize = 4 * 366;

/// Days folded per `uv_fold.lua` call. A PFMERGE from a sparse HyperLogLog near its
/// 3,000-byte limit takes Redis ~1 ms, so a source's 10 days in one call held it ~11 ms
/// (`tests/abuse_budget.rs`'s slow log); 4 days keep a call under ~5 ms. Folding is idempotent,
/// so a merge cut between calls is completed by repeating it.
const FOLD_DAYS_PER_CALL: usize = 4;

/// Merge sources in flight at once: each holds up to a range of HyperLogLogs (≤ 12 KiB a day),
/// so this bounds the gateway's memory while keeping the round trips overlapped.
const SOURCES_IN_FLIGHT: usize = 4;

/// A string reply as bytes (fred hands back UTF-8 strings as `String`, others as `Bytes`).
fn into_bytes(v: Value) -> Option<Bytes> {
    match v {
        Value::Bytes(b) => Some(b),
        Value::String(s) => Some(s.into_inner()),
        _ => None,
    }
}

fn as_u64(v: &Value) -> Result<u64, StoreError> {
    v.as_u64()
        .ok_or_else(|| StoreError::Internal(format!("expected a count, got {v:?}")))
}

impl UvStore for RedisStore {
    async fn uv_record(
        &self,
        page: &Name,
        day: Day,
        visitors: &[String],
        expire_at: i64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Recorded>, StoreError> {
        let keys = vec![
            self.keys.uv_day(page, day),
            self.keys.pv_day(page, day),
            self.keys
                .uv_idempotency(page, idem.map_or("", |i| i.key.as_str())),
        ];
        let mut args: Vec<Value> = Vec::with_capacity(visitors.len() + 4);
        args.push(expire_at.into());
        args.push(idem.map_or("", |i| i.fingerprint.as_str()).into());
        args.push(IDEMPOTENCY_SECS.to_string().into());
        args.push(day.to_string().into());
        args.extend(visitors.iter().map(|v| Value::from(v.as_str())));
        let (changed, pv, recorded_day, flag): (i64, u64, String, String) = RECORD
            .evalsha_with_reload(self.pool.next(), keys, args)
            .await
            .map_err(map_err)?;
        if flag == "key_reused" {
            return Ok(Once::KeyReused);
        }
        let done = Recorded {
            day: Day::parse(&recorded_day).map_err(|e| {
                StoreError::Internal(format!("uv_record.lua returned a bad day: {e}"))
            })?,
            changed: changed == 1,
            pv,
        };
        Ok(if flag == "replay" {
            Once::Replayed(done)
        } else {
            Once::Now(done)
        })
    }

    async fn uv_page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> {
        let keys: Vec<String> = days
            .iter()
            .map(|d| self.keys.uv_day(page, *d))
            .chain(days.iter().map(|d| self.keys.pv_day(page, *d)))
            .collect();
        let reply: Vec<Value> = RANGE
            .evalsha_with_reload(self.pool.next(), keys, ())
            .await
            .map_err(map_err)?;
        if reply.len() != 1 + 2 * days.len() {
            return Err(StoreError::Internal(format!(
                "uv_range answered {} values for {} days",
                reply.len(),
                days.len()
            )));
        }
        let daily = reply[1..]
            .chunks_exact(2)
            .map(|pair| Ok((as_u64(&pair[0])?, as_u64(&pair[1])?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(PageCounts {
            daily,
            uv: as_u64(&reply[0])?,
        })
    }

    /// Wave one collapses each page's range into one HyperLogLog in its own slot (pipelined,
    /// bounded by [`PAGE_DAYS_IN_FLIGHT`]); wave two counts their union under the first page's tag.
    async fn uv_union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> {
        let first = match pages {
            [] => return Ok(0),
            // One page is one slot: its range script already counts the union.
            [page] => return Ok(self.uv_page_counts(page, days).await?.uv),
            [first, ..] => first,
        };
        let calls: Vec<_> = pages.iter().map(|p| self.collapse(p, days)).collect();
        let collapsed: Vec<Option<Bytes>> = stream::iter(calls)
            .buffer_unordered((PAGE_DAYS_IN_FLIGHT / days.len().max(1)).max(1))
            .try_collect()
            .await?;
        let hlls: Vec<Value> = collapsed.into_iter().flatten().map(Value::Bytes).collect();
        if hlls.is_empty() {
            return Ok(0);
        }
        let keys = vec![
            self.keys.uv_scratch(first, 0),
            self.keys.uv_scratch(first, 1),
        ];
        let mut args = Vec::with_capacity(hlls.len() + 1);
        args.push(Value::from(SCRATCH_TTL_MS));
        args.extend(hlls);
        UNION_COUNT
            .evalsha_with_reload(self.pool.next(), keys, args)
            .await
            .map_err(map_err)
    }

    /// Per source: one MGET of its days (one slot), then one script folding the days it has
    /// into `into` (the target's slot). A few sources run at once, each independent, so a
    /// failure half-way leaves a partial merge that a retry completes (PFMERGE is idempotent).
    async fn uv_merge(
        &self,
        sources: &[Name],
        into: &Name,
        days: &[FoldDay],
    ) -> Result<u32, StoreError> {
        // Futures built up front: a stream closure over `&Name` trips the Send checker.
        let calls: Vec<_> = sources
            .iter()
            .map(|src| self.fold_source(src, into, days))
            .collect();
        let folded: Vec<Vec<Day>> = stream::iter(calls)
            .buffer_unordered(SOURCES_IN_FLIGHT)
            .try_collect()
            .await?;
        let distinct: BTreeSet<Day> = folded.into_iter().flatten().collect();
        Ok(distinct.len() as u32)
    }
}

impl RedisStore {
    /// One page's HyperLogLogs over `days` merged into one string, or `None` if it has none.
    async fn collapse(&self, page: &Name, days: &[Day]) -> Result<Option<Bytes>, StoreError> {
        let mut keys = Vec::with_capacity(days.len() + 1);
        keys.push(self.keys.uv_scratch(page, 0));
        keys.extend(days.iter().map(|d| self.keys.uv_day(page, *d)));
        let reply: Value = COLLAPSE
            .evalsha_with_reload(self.pool.next(), keys, vec![SCRATCH_TTL_MS])
            .await
            .map_err(map_err)?;
        Ok(into_bytes(reply))
    }

    /// Folds `src`'s days into `into`; returns the days `src` had visitors on.
    async fn fold_source(
        &self,
        src: &Name,
        into: &Name,
        days: &[FoldDay],
    ) -> Result<Vec<Day>, StoreError> {
        let src_keys: Vec<String> = days.iter().map(|f| self.keys.uv_day(src, f.day)).collect();
        // Every key carries the source's hash tag: one slot, so one MGET even on a Cluster.
        let values: Vec<Value> = if src_keys.len() == 1 {
            vec![self.pool.get(src_keys[0].as_str()).await.map_err(map_err)?]
        } else {
            self.pool.mget(src_keys).await.map_err(map_err)?
        };
        let present: Vec<(&FoldDay, Bytes)> = days
            .iter()
            .zip(values)
            .filter_map(|(f, v)| into_bytes(v).map(|b| (f, b)))
            .collect();
        if present.is_empty() {
            return Ok(Vec::new());
        }
        for part in present.chunks(FOLD_DAYS_PER_CALL) {
            let mut keys = Vec::with_capacity(part.len() + 1);
            keys.push(self.keys.uv_scratch(into, 0));
            keys.extend(part.iter().map(|(f, _)| self.keys.uv_day(into, f.day)));
            let mut args = Vec::with_capacity(2 * part.len() + 1);
            args.push(Value::from(SCRATCH_TTL_MS));
            args.extend(part.iter().map(|(f, _)| Value::from(f.expire_at)));
            args.extend(part.iter().map(|(_, b)| Value::Bytes(b.clone())));
            let _: i64 = FOLD
                .evalsha_with_reload(self.pool.next(), keys, args)
                .await
                .map_err(map_err)?;
        }
        Ok(present.iter().map(|(f, _)| f.day).collect())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::keys::Keys;
    use crate::types::{Day, Name};

    /// The contract tests use pages `a`, `b` and `c` for cross-page work: they must land in
    /// different slots — indeed on different masters of the 3-master test cluster (slots
    /// 0-5460, 5461-10922, 10923-16383) — or the Cluster runs would prove nothing.
    #[test]
    fn contract_test_pages_live_on_different_masters() {
        let keys = Keys::new("t1-2:");
        let day = Day::parse("2026-11-21").unwrap();
        let master = |p: &str| {
            let key = keys.uv_day(&Name::try_from(p.to_owned()).unwrap(), day);
            fred::util::redis_keyslot(key.as_bytes()) / 5461
        };
        let mut masters = vec![master("a"), master("b"), master("c")];
        masters.sort_unstable();
        assert_eq!(masters, vec![0, 1, 2]);
    }
}
