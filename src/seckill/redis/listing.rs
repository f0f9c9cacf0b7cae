//! The voucher listing on Redis, from an index the writes keep: `skr:{vouchers}:begin`, every
//! voucher id scored by its begin, in the registry's slot (so one script reads a page of it),
//! while each voucher lives in its own.
//!
//! No script can touch both slots, so the index is kept in an order that makes it safe:
//! - a put enters the voucher in the index (and the registry) *before* it writes the voucher
//!   (`seckill_register.lua`), so a voucher that exists is never missing from it;
//! - a listing reads every voucher it lists (it needs the stock and status anyway) and skips an
//!   entry whose voucher does not exist (a create that failed), so none is shown that is not
//!   there. Vouchers are never deleted and never expire, so such an entry waits for its voucher
//!   to be created by a later put; none is removed, as removing one could race that put;
//! - a voucher's place follows its begin by the put that wrote it last (`rev`, counted in the
//!   voucher): after each put, and when a listing finds a voucher whose place disagrees with its
//!   begin, `seckill_index_move.lua` moves it only to a later rev's begin. Meanwhile a voucher
//!   whose begin a put is changing is listed once, at its old place.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};

use super::wire::{bad, int, tag, view, GET};
use crate::seckill::logic::{Listed, Phase};
use crate::seckill::{Voucher, Vouchers};
use crate::store::error::StoreError;
use crate::types::{Name, Walk};

static REGISTER: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_register.lua")));
static MOVE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_index_move.lua")));
static PAGE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_index_page.lua")));
static BACKFILL: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("seckill_index_backfill.lua")));

/// Whether this process saw the index completed from the registry ([`RedisStore::backfill`]).
#[derive(Debug, Default)]
struct Backfilled(AtomicBool);

impl Kept for Backfilled {}

static BACKFILLED: Slot<Backfilled> = Slot::new();

/// Index entries read per `seckill_index_page.lua` call, their vouchers then read at once: 250
/// entries with scores cost the script well under a millisecond.
const ENTRIES_PER_CALL: usize = 250;

impl RedisStore {
    /// Enters `voucher` in the registry the ledger reads and in the listing's index, at `begin`
    /// unless it is there already; before the voucher is written (see the module).
    pub(super) async fn register_voucher(
        &self,
        voucher: &Name,
        begin_ms: i64,
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .script(
                &REGISTER,
                vec![self.keys.voucher_registry(), self.keys.voucher_index()],
                vec![voucher.to_string(), begin_ms.to_string()],
            )
            .await?;
        Ok(())
    }

    /// Places `voucher` in the index at `begin_ms`, as of its put `rev` (see the module).
    pub(super) async fn place_voucher(
        &self,
        voucher: &Name,
        begin_ms: i64,
        rev: i64,
    ) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .script(
                &MOVE,
                vec![self.keys.voucher_index(), self.keys.voucher_revs()],
                vec![voucher.to_string(), begin_ms.to_string(), rev.to_string()],
            )
            .await?;
        Ok(())
    }

    /// The voucher with its rev, or `None` when it does not exist.
    pub(super) async fn voucher_at_rev(
        &self,
        voucher: &Name,
    ) -> Result<Option<(Voucher, i64)>, StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(&GET, vec![self.keys.voucher(voucher)], ())
            .await?;
        match tag(&reply).as_str() {
            "not_found" => Ok(None),
            "ok" => view(&reply)
                .zip(int(reply.get(7)))
                .map(Some)
                .ok_or_else(|| bad("get", &reply)),
            _ => Err(bad("get", &reply)),
        }
    }

    /// Up to `count` index entries after `after` within `phase`'s begins, and whether more
    /// follow.
    async fn index_entries(
        &self,
        after: Option<&Listed>,
        phase: Option<Phase>,
        count: usize,
    ) -> Result<(Vec<Listed>, bool), StoreError> {
        let bound = |b: Option<i64>| b.map_or_else(String::new, |b| b.to_string());
        let reply: Vec<Value> = self
            .pool
            .script(
                &PAGE,
                vec![self.keys.voucher_index()],
                vec![
                    after.map_or_else(String::new, |a| a.begin_ms.to_string()),
                    after.map_or_else(String::new, |a| a.voucher.to_string()),
                    count.to_string(),
                    // Offsets from the index's own now.
                    bound(phase.and_then(|p| p.first_begin(0))),
                    bound(phase.and_then(|p| p.last_begin(0))),
                ],
            )
            .await?;
        let more = int(reply.get(1)) == Some(1);
        let entries = reply
            .get(2..)
            .unwrap_or_default()
            .chunks_exact(2)
            .map(|pair| {
                let voucher = pair[0].as_string().and_then(|s| Name::try_from(s).ok());
                let begin = pair[1].as_string().and_then(|s| s.parse::<f64>().ok());
                match (voucher, begin) {
                    (Some(voucher), Some(begin)) => Ok(Listed {
                        begin_ms: begin as i64,
                        voucher,
                    }),
                    _ => Err(bad("index page", &reply)),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok((entries, more))
    }

    /// One bounded step of completing the index from the registry, until it is complete
    /// (then never again in this process): the vouchers written before the index existed are
    /// placed [`ENTRIES_PER_CALL`] registry members per listing.
    async fn backfill(&self) -> Result<(), StoreError> {
        let done = &self.kept(&BACKFILLED).0;
        if done.load(Ordering::Relaxed) {
            return Ok(());
        }
        let at = self.keys.voucher_backfill();
        let keys = vec![
            self.keys.voucher_registry(),
            self.keys.voucher_revs(),
            at.clone(),
        ];
        let step: Vec<String> = self
            .pool
            .script(&BACKFILL, keys, vec![ENTRIES_PER_CALL.to_string()])
            .await?;
        let Some((next, ids)) = step.split_first() else {
            return Err(StoreError::Internal("an empty backfill reply".to_owned()));
        };
        if next == "done" {
            done.store(true, Ordering::Relaxed);
            return Ok(());
        }
        let ids: Vec<Name> = ids
            .iter()
            .filter_map(|id| Name::try_from(id.clone()).ok())
            .collect();
        let reads = futures::future::try_join_all(ids.iter().map(|v| self.voucher_at_rev(v)));
        for (voucher, read) in ids.iter().zip(reads.await?) {
            if let Some((v, rev)) = read {
                self.place_voucher(voucher, v.begin_ms, rev).await?;
            }
        }
        let next = if next == "0" { "done" } else { next.as_str() };
        let _: () = self
            .pool
            .at(&at)?
            .set(&at, next, None, None, false)
            .await
            .map_err(map_err)?;
        Ok(())
    }

    /// The listing (`SeckillStore::seckill_list`): index entries [`ENTRIES_PER_CALL`] at a
    /// time, each one's voucher read on its own slot, all of a call's at once.
    pub(super) async fn list_vouchers(
        &self,
        after: Option<Listed>,
        phase: Option<Phase>,
        limit: usize,
        examine: usize,
    ) -> Result<Vouchers, StoreError> {
        self.backfill().await?;
        let mut walk = Walk::new(after, limit, examine);
        loop {
            let (after, want) = walk.next_read(ENTRIES_PER_CALL);
            let (entries, more) = self.index_entries(after, phase, want).await?;
            let reads = entries.iter().map(|at| self.voucher_at_rev(&at.voucher));
            let mut kept = Vec::with_capacity(entries.len());
            for (at, read) in entries
                .iter()
                .zip(futures::future::try_join_all(reads).await?)
            {
                let Some((v, rev)) = read else {
                    kept.push(None);
                    continue;
                };
                if v.begin_ms != at.begin_ms {
                    self.place_voucher(&at.voucher, v.begin_ms, rev).await?;
                }
                kept.push(Some(v).filter(|v| phase.is_none_or(|p| p.holds(v.status()))));
            }
            if let Some(page) = walk.take(entries, kept, more) {
                return Ok(page);
            }
        }
    }
}

/// The listing's keys, in the registry's slot (`crate::store::keys`).
impl Keys {
    /// The listing's index: a sorted set of every voucher id, scored by its begin (unix ms).
    pub(crate) fn voucher_index(&self) -> String {
        format!("{}skr:{{vouchers}}:begin", self.prefix)
    }

    /// The put (`rev`) whose begin each voucher's place in the index follows: a hash.
    pub(crate) fn voucher_revs(&self) -> String {
        format!("{}skr:{{vouchers}}:revs", self.prefix)
    }

    /// Where completing the index from the registry goes on (an `SSCAN` cursor), or `done`.
    pub(crate) fn voucher_backfill(&self) -> String {
        format!("{}skr:{{vouchers}}:backfill", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;

    #[test]
    fn the_index_is_in_the_registrys_slot() {
        let keys = Keys::new("gw:");
        let all = [
            keys.voucher_registry(),
            keys.voucher_index(),
            keys.voucher_revs(),
            keys.voucher_backfill(),
        ];
        assert_one_slot("vouchers", "gw:skr:{vouchers}", &all);
    }
}
