//! The cohort: a day's check-ins kept per chunk of users (a set of offsets while sparse, a
//! bitmap past [`COHORT_SPARSE_MAX`] users), the registry of chunks ever written, and the
//! stats over days, combined here from each chunk's days.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;
use futures::stream::{self, StreamExt, TryStreamExt};

use super::wire::bytes_of;
use crate::store::redis::script_after;
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::checkins::Cohort;
use crate::store::error::StoreError;
use crate::types::{Day, UserId};

pub(super) static COHORT_SET: LazyLock<Script> =
    script_after!("checkin_common.lua", "cohort_set.lua");
static COHORT_GET: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("cohort_get.lua")));

/// Most users a day's chunk keeps as a set of offsets before it becomes a bitmap. 512 is
/// Redis's default `set-max-intset-entries`, so a sparse chunk stays an intset (4 bytes per
/// user), and a bitmap (at most 128 KiB) is only made for more than 512 users: a sparse or
/// hostile user id costs a few bytes, never 128 KiB (docs/performance.md "Abuse budget").
pub(super) const COHORT_SPARSE_MAX: i64 = 512;

/// Users per cohort chunk: 2^20 bits = at most 128 KiB per chunk key, so a check-in by user
/// 4294967295 allocates one chunk, not a 512 MiB string (and a chunk with few users stays a
/// small set of offsets: `cohort_set.lua`).
const COHORT_CHUNK_BITS: u32 = 20;

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

impl KnownChunks {
    fn contains(&self, chunk: u32) -> bool {
        self.0[(chunk / 64) as usize].load(Ordering::Relaxed) & (1 << (chunk % 64)) != 0
    }

    fn insert(&self, chunk: u32) {
        self.0[(chunk / 64) as usize].fetch_or(1 << (chunk % 64), Ordering::Relaxed);
    }
}

pub(super) fn chunk_of(user: UserId) -> (u32, u32) {
    (
        user.0 >> COHORT_CHUNK_BITS,
        user.0 & ((1 << COHORT_CHUNK_BITS) - 1),
    )
}

impl RedisStore {
    /// Adds a chunk to the registry on a Cluster (where the check-in script cannot), once per
    /// chunk per process, and again when the chunk key was newly created (`existed` false).
    pub(super) async fn register_chunk(&self, chunk: u32, existed: bool) -> Result<(), StoreError> {
        if !existed || !self.kept(&CHUNKS).contains(chunk) {
            let _: i64 = self
                .pool
                .at(&self.keys.cohort_registry())?
                .sadd(self.keys.cohort_registry(), i64::from(chunk))
                .await
                .map_err(map_err)?;
            self.kept(&CHUNKS).insert(chunk);
        }
        Ok(())
    }

    /// Fetches each registered chunk's days (bitmaps ≤ 128 KiB or ≤ 512 offsets each, a few
    /// chunks at a time)
    /// and combines them here: no long-running BITOP on a huge key, no cross-slot command.
    pub(super) async fn cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        let chunks: Vec<i64> = self
            .pool
            .at(&self.keys.cohort_registry())?
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

    async fn chunk_cohort(&self, chunk: u32, days: &[Day]) -> Result<Cohort, StoreError> {
        let gets = days.iter().map(|d| {
            let key = self.keys.cohort_chunk(chunk, *d);
            async move {
                self.pool
                    .script::<Vec<Value>, _, _>(&COHORT_GET, key, ())
                    .await
            }
        });
        let values = futures::future::try_join_all(gets).await?;
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
