//! Unique visitors on Redis HyperLogLogs, with page views in counters beside them.
//!
//! A page's keys share its hash tag, so recording is one script; visits without an
//! idempotency key that a worker takes up in one turn go to it together, per page and day
//! (`store::group`). Reads over many keys (a
//! page's range, unions, the sources of a merge) fetch the HyperLogLogs — plain strings — with
//! MGETs of a few dozen keys and count or merge their registers in the gateway (`hyll.rs`),
//! exactly as PFCOUNT/PFMERGE would: one PFCOUNT over a year of dense keys held Redis ~8 ms,
//! and this never needs a cross-slot command. A merge writes each day's union with one small
//! PFMERGE into the target's slot.

mod hyll;

use std::sync::LazyLock;

use fred::bytes::Bytes;
use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand};
use futures::stream::{self, StreamExt};

use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::store::keys::{day_str, Keys};
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};
use crate::types::{Day, Name, Once, IDEMPOTENCY_SECS};
use crate::uv::hll::Hll;
use crate::uv::{FoldDay, Listening, Merge, NewVisits, PageCounts, Recorded, UvStore, VisitorKey};

static RECORD: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("uv_record.lua")));
static RECORD_MANY: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("uv_record_many.lua")));
static FOLD: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("uv_fold.lua")));

/// Scratch keys live this long if a script dies before deleting them.
const SCRATCH_TTL_MS: i64 = 10_000;

/// Keys read per MGET: 32 dense HyperLogLogs (~400 KB) cost Redis a few hundred µs.
const DAYS_PER_CALL: usize = 32;

/// Reads in flight at once in a union or a merge: bounds the gateway's memory (each holds up
/// to 32 decoded HyperLogLogs) while keeping round trips overlapped.
const READS_IN_FLIGHT: usize = 4;

/// Days folded per `uv_fold.lua` call. A PFMERGE into a sparse HyperLogLog near its
/// 3,000-byte limit takes Redis ~1 ms (it converts it), so 4 days keep a call well under 5 ms.
const FOLD_DAYS_PER_CALL: usize = 4;

/// Most requests in one `uv_record_many.lua` call, and the visitors after which a call takes
/// no more requests: bounds the script's work (1,000 PFADDed visitors take Redis well under
/// 1 ms). A larger group goes as several calls, one after the other.
const MAX_GROUP: usize = 64;
const MAX_GROUP_VISITORS: usize = 1_000;

/// The visits of requests without an idempotency key, grouped by page, day and expiry: a busy
/// page costs one script run per worker and turn, not one per request (the script's
/// own cost, ~2 µs of Redis time per run, was most of a UV add's Redis time).
type Visits = GroupCommit<(Name, Day, i64), Vec<Value>, Result<Recorded, StoreError>>;

/// Visits waiting to go in one call, per page and day.
static VISITS: Slot<Visits> = Slot::new();

/// The key this store's visitors are hashed with, once known.
static KEY: Slot<Key> = Slot::new();

#[derive(Default)]
struct Key(tokio::sync::OnceCell<VisitorKey>);

impl Kept for Key {}

impl RedisStore {
    /// The key visitors are hashed with: made of `GATEWAY_UV_VISITOR_KEY`, else of the secret
    /// kept in the store (`uvk:{uv}`, no expiry), which the first gateway to need it writes
    /// (`SET NX GET`: of two gateways racing, both end with the one that was written first).
    /// Fetched once per store; a failed fetch is tried again by the next visit.
    async fn visitor_key(&self, secret: Option<&str>) -> Result<VisitorKey, StoreError> {
        let cell = &self.kept(&KEY).0;
        if let Some(key) = cell.get() {
            return Ok(*key);
        }
        cell.get_or_try_init(|| async {
            if let Some(secret) = secret {
                return Ok(VisitorKey::from_secret(secret.as_bytes()));
            }
            let fresh = VisitorKey::new_secret();
            let set = CustomCommand::new_static("SET", ClusterHash::FirstKey, false);
            let args = vec![
                Value::from(self.keys.uv_visitor_key()),
                Value::from(fresh.as_str()),
                Value::from("NX"),
                Value::from("GET"),
            ];
            let kept: Option<String> = self.pool.custom(set, args).await.map_err(map_err)?;
            Ok(VisitorKey::from_secret(kept.unwrap_or(fresh).as_bytes()))
        })
        .await
        .copied()
    }
}

/// `visitors` hashed with `key`, as script arguments.
fn hashed(key: VisitorKey, visitors: &[String]) -> impl Iterator<Item = Value> + '_ {
    visitors
        .iter()
        .map(move |v| Value::Bytes(Bytes::copy_from_slice(&key.hash(v))))
}

fn as_u64(v: &Value) -> Result<u64, StoreError> {
    v.as_u64()
        .ok_or_else(|| StoreError::Internal(format!("expected a count, got {v:?}")))
}

/// Records a group of requests' visits (each request's visitors, in arrival order): a lone
/// request with `uv_record.lua`, more with `uv_record_many.lua`, [`MAX_GROUP`] requests or
/// [`MAX_GROUP_VISITORS`] visitors per call.
async fn record_group(
    store: RedisStore,
    (page, day, expire_at): (Name, Day, i64),
    groups: Vec<Vec<Value>>,
) -> Vec<Result<Recorded, StoreError>> {
    let keys = || vec![store.keys.uv_day(&page, day), store.keys.pv_day(&page, day)];
    let mut replies = Vec::with_capacity(groups.len());
    for call in group::calls(groups, MAX_GROUP, MAX_GROUP_VISITORS, Vec::len) {
        let visitors: usize = call.iter().map(Vec::len).sum();
        let n = call.len();
        let done = if n == 1 {
            let mut args = Vec::with_capacity(visitors + 1);
            args.push(Value::from(expire_at));
            args.extend(call.into_iter().flatten());
            record_one(&store, keys(), args, day).await.map(|r| vec![r])
        } else {
            let sizes: Vec<u64> = call.iter().map(|g| g.len() as u64).collect();
            let mut args = Vec::with_capacity(visitors + n + 2);
            args.push(Value::from(expire_at));
            args.push(Value::from(n as i64));
            args.extend(sizes.iter().map(|&s| Value::from(s as i64)));
            args.extend(call.into_iter().flatten());
            record_many(&store, keys(), args, day, &sizes).await
        };
        match done {
            Ok(done) => replies.extend(done.into_iter().map(Ok)),
            Err(e) => replies.extend((0..n).map(|_| Err(e.clone()))),
        }
    }
    replies
}

/// One request's visits: `{changed, pv}` from `uv_record.lua` without an idempotency key.
async fn record_one(
    store: &RedisStore,
    keys: Vec<String>,
    args: Vec<Value>,
    day: Day,
) -> Result<Recorded, StoreError> {
    let reply: Vec<Value> = store.pool.script(&RECORD, keys, args).await?;
    match &reply[..] {
        [changed, pv] => Ok(Recorded {
            day,
            changed: changed.as_i64() == Some(1),
            pv: as_u64(pv)?,
        }),
        _ => Err(StoreError::Internal(format!(
            "uv_record.lua returned {reply:?}"
        ))),
    }
}

/// Several requests' visits in one `uv_record_many.lua` run; `sizes` are their visitor counts.
async fn record_many(
    store: &RedisStore,
    keys: Vec<String>,
    args: Vec<Value>,
    day: Day,
    sizes: &[u64],
) -> Result<Vec<Recorded>, StoreError> {
    let reply: Vec<Value> = store.pool.script(&RECORD_MANY, keys, args).await?;
    let [pv, changed @ ..] = &reply[..] else {
        return Err(StoreError::Internal(
            "uv_record_many.lua returned nothing".to_owned(),
        ));
    };
    if changed.len() != sizes.len() {
        return Err(StoreError::Internal(format!(
            "uv_record_many.lua returned {reply:?} for {} requests",
            sizes.len()
        )));
    }
    // Each request's page views are the total less the visits of the requests after it.
    let mut pv = as_u64(pv)?;
    let mut done: Vec<Recorded> = changed
        .iter()
        .zip(sizes)
        .rev()
        .map(|(changed, &size)| {
            let mine = pv;
            pv = pv.saturating_sub(size);
            Recorded {
                day,
                changed: changed.as_i64() == Some(1),
                pv: mine,
            }
        })
        .collect();
    done.reverse();
    Ok(done)
}

impl UvStore for RedisStore {
    async fn uv_record(
        &self,
        page: &Name,
        visits: NewVisits<'_>,
    ) -> Result<Once<Recorded>, StoreError> {
        let NewVisits {
            day,
            visitors,
            secret,
            expire_at,
            idem,
        } = visits;
        let key = self.visitor_key(secret).await?;
        let Some(idem) = idem else {
            // Without a key, visits to one page and day join this turn's group (`record_group`).
            let visitors = hashed(key, visitors).collect();
            let key = (page.clone(), day, expire_at);
            return match self
                .kept(&VISITS)
                .join(key, visitors, self, record_group)
                .await
            {
                Some(done) => done.map(Once::Now),
                None => Err(StoreError::Unavailable(
                    "the gateway is shutting down".to_owned(),
                )),
            };
        };
        let keys = vec![
            self.keys.uv_day(page, day),
            self.keys.pv_day(page, day),
            self.keys.uv_idempotency(page, &idem.key),
        ];
        let mut args: Vec<Value> = Vec::with_capacity(visitors.len() + 4);
        args.push(expire_at.into());
        args.push(idem.fingerprint.as_str().into());
        args.push((IDEMPOTENCY_SECS as i64).into());
        args.push(day.to_string().into());
        args.extend(hashed(key, visitors));
        let reply: Vec<Value> = self.pool.script(&RECORD, keys, args).await?;
        let bad = || StoreError::Internal(format!("uv_record.lua returned {reply:?}"));
        let text = |v: &Value| v.as_str().map(|s| s.into_owned());
        let [changed, pv, first_day, flag] = &reply[..] else {
            return Err(bad());
        };
        let flag = text(flag).ok_or_else(bad)?;
        if flag == "key_reused" {
            return Ok(Once::KeyReused);
        }
        let first_day = Day::parse(&text(first_day).ok_or_else(bad)?)
            .map_err(|e| StoreError::Internal(format!("uv_record.lua returned a bad day: {e}")))?;
        let done = Recorded {
            day: first_day,
            changed: changed.as_i64().ok_or_else(bad)? == 1,
            pv: as_u64(pv)?,
        };
        Ok(if flag == "replay" {
            Once::Replayed(done)
        } else {
            Once::Now(done)
        })
    }

    /// Reads the days' HyperLogLogs and view counters (half [`DAYS_PER_CALL`] days per MGET) and
    /// counts in the gateway: PFCOUNT over a year of dense keys held Redis ~8 ms in one call.
    async fn uv_listen(&self, page: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&self.keys.uv_events(page)))
    }

    async fn uv_page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> {
        let mut all = Hll::new();
        let mut daily = Vec::with_capacity(days.len());
        for part in days.chunks(DAYS_PER_CALL / 2) {
            let keys: Vec<String> = part
                .iter()
                .map(|d| self.keys.uv_day(page, *d))
                .chain(part.iter().map(|d| self.keys.pv_day(page, *d)))
                .collect();
            // One page's keys share its hash tag: one slot, so one MGET even on a Cluster.
            let values: Vec<Value> = self.pool.mget(keys).await.map_err(map_err)?;
            let (hlls, views) = values.split_at(part.len());
            for (hll, pv) in hlls.iter().zip(views) {
                let uv = match hll_of(hll)? {
                    Some(h) => {
                        all.merge(&h);
                        h.count()
                    }
                    None => 0,
                };
                let pv = match pv {
                    Value::Null => 0,
                    v => as_u64(v)?,
                };
                daily.push((uv, pv));
            }
        }
        Ok(PageCounts {
            daily,
            uv: all.count(),
        })
    }

    /// Reads every page's days ([`DAYS_PER_CALL`] per call, a few pages at once) and merges
    /// the registers in the gateway: one PFMERGE/PFCOUNT over a year of dense keys held Redis
    /// ~8 ms, and this works on a Cluster without moving HyperLogLogs between slots.
    async fn uv_union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> {
        // Futures built up front: a stream closure over `&Name` trips the Send checker.
        let calls: Vec<_> = pages
            .iter()
            .flat_map(|p| {
                days.chunks(DAYS_PER_CALL)
                    .map(move |part| self.read_days(p, part))
            })
            .collect();
        let mut all = Hll::new();
        let mut reads = stream::iter(calls).buffer_unordered(READS_IN_FLIGHT);
        while let Some(hlls) = reads.next().await {
            for h in hlls?.into_iter().flatten() {
                all.merge(&h);
            }
        }
        Ok(all.count())
    }

    /// Per block of [`DAYS_PER_CALL`] days: each source's HyperLogLogs for the block (one MGET
    /// per source, its slot), merged per day in the gateway, then folded into `into` in its
    /// slot, [`FOLD_DAYS_PER_CALL`] days per script. Folding is idempotent, so a merge cut
    /// between calls is completed by repeating it.
    async fn uv_merge(&self, into: &Name, merge: Merge<'_>) -> Result<u32, StoreError> {
        let Merge { sources, days } = merge;
        let mut folded = 0;
        for block in days.chunks(DAYS_PER_CALL) {
            let block_days: Vec<Day> = block.iter().map(|f| f.day).collect();
            let calls: Vec<_> = sources
                .iter()
                .map(|src| self.read_days(src, &block_days))
                .collect();
            let mut union: Vec<Option<Hll>> = vec![None; block.len()];
            let mut reads = stream::iter(calls).buffer_unordered(READS_IN_FLIGHT);
            while let Some(hlls) = reads.next().await {
                for (acc, h) in union.iter_mut().zip(hlls?) {
                    if let Some(h) = h {
                        acc.get_or_insert_with(Hll::new).merge(&h);
                    }
                }
            }
            let present: Vec<(&FoldDay, Hll)> = block
                .iter()
                .zip(union)
                .filter_map(|(f, h)| h.map(|h| (f, h)))
                .collect();
            folded += present.len() as u32;
            for part in present.chunks(FOLD_DAYS_PER_CALL) {
                let mut keys = Vec::with_capacity(part.len() + 1);
                keys.push(self.keys.uv_scratch(into, 0));
                keys.extend(part.iter().map(|(f, _)| self.keys.uv_day(into, f.day)));
                let mut args = Vec::with_capacity(2 * part.len() + 1);
                args.push(Value::from(SCRATCH_TTL_MS));
                args.extend(part.iter().map(|(f, _)| Value::from(f.expire_at)));
                args.extend(
                    part.iter()
                        .map(|(_, h)| Value::Bytes(Bytes::from(hyll::encode(h)))),
                );
                let _: i64 = self.pool.script(&FOLD, keys, args).await?;
            }
        }
        Ok(folded)
    }
}

/// A HyperLogLog read with GET/MGET, or `None` for a missing key.
fn hll_of(v: &Value) -> Result<Option<Hll>, StoreError> {
    let bytes = match v {
        Value::Null => return Ok(None),
        Value::Bytes(b) => &b[..],
        Value::String(s) => s.as_bytes(),
        other => {
            return Err(StoreError::Internal(format!(
                "expected a HyperLogLog, got {other:?}"
            )))
        }
    };
    hyll::decode(bytes)
        .map(Some)
        .ok_or_else(|| StoreError::Internal("a uv key does not hold a HyperLogLog".to_owned()))
}

impl RedisStore {
    /// One page's HyperLogLogs for `days` (at most [`DAYS_PER_CALL`]), in order.
    async fn read_days(&self, page: &Name, days: &[Day]) -> Result<Vec<Option<Hll>>, StoreError> {
        let keys: Vec<String> = days.iter().map(|d| self.keys.uv_day(page, *d)).collect();
        let values: Vec<Value> = if keys.len() == 1 {
            vec![self.pool.get(keys[0].as_str()).await.map_err(map_err)?]
        } else {
            self.pool.mget(keys).await.map_err(map_err)?
        };
        values.iter().map(hll_of).collect()
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A page's event channel (sharded pub/sub, in the page's slot): each script run that
    /// records visits publishes the day on it. The scripts spell it from the day's key.
    pub(crate) fn uv_events(&self, page: &Name) -> String {
        self.join(&["uv:{", page.as_str(), "}:events"])
    }

    /// A page's distinct visitors on one day (a HyperLogLog).
    pub(crate) fn uv_day(&self, page: &Name, day: Day) -> String {
        self.join(&["uv:{", page.as_str(), "}:", day_str(&day.text())])
    }

    /// The first outcome of a visit under one idempotency key (`digest`: SHA-256 hex of the
    /// client's key), in the page's slot so the record script keeps it atomically.
    pub(crate) fn uv_idempotency(&self, page: &Name, digest: &str) -> String {
        self.join(&["uv:{", page.as_str(), "}:idem:", digest])
    }

    /// A page's views on one day (a counter), in the same slot as [`Self::uv_day`].
    pub(crate) fn pv_day(&self, page: &Name, day: Day) -> String {
        self.join(&["pv:{", page.as_str(), "}:", day_str(&day.text())])
    }

    /// The secret visitor ids are hashed with, when no `GATEWAY_UV_VISITOR_KEY` is set: one
    /// for the whole store, kept without expiry.
    pub(crate) fn uv_visitor_key(&self) -> String {
        format!("{}uvk:{{uv}}", self.prefix)
    }

    /// Scratch key `n` under a page's hash tag, where HyperLogLogs copied from other slots
    /// are merged; scripts delete it before returning and give it a short TTL meanwhile.
    pub(crate) fn uv_scratch(&self, page: &Name, n: u8) -> String {
        format!("{}uvt:{{{page}}}:{n}", self.prefix)
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

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_pages_day_keys_and_scratch_share_a_slot() {
        let (keys, page) = (Keys::new("gw:"), name("home"));
        let day = Day::parse("2026-11-21").unwrap();
        let all = [
            keys.uv_day(&page, day),
            keys.pv_day(&page, day),
            keys.pv_day(&page, day.succ()),
            keys.uv_scratch(&page, 1),
            keys.uv_idempotency(&page, "ab"),
        ];
        assert_one_slot("home", "gw:uv:{home}:2026-11-21", &all);
        assert_eq!(all[1], "gw:pv:{home}:2026-11-21");
        assert_eq!(all[4], "gw:uv:{home}:idem:ab");
    }
}
