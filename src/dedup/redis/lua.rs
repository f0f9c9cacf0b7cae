//! The Lua engine: a scalable Bloom filter on plain bitmaps, one layer after another
//! (`dedup_add.lua`, `dedup_check.lua`, with their shared head `dedup_common.lua`). A batch goes
//! [`items_per_call`] items per script call, and a layer bigger than [`LAYER_PIECE_BYTES`] is
//! kept as piece keys, built one per call by `dedup_grow.lua` before a script may use it.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use super::params::stored;
use super::wire::{Batch, Step, LAYER_PIECE_BYTES};
use crate::store::redis::{script_after, RedisStore};

use crate::dedup::logic::{ItemHash, Params};
use crate::dedup::{Added, Engine, Policy};
use crate::store::error::StoreError;
use crate::types::Name;

/// Bits one Lua-engine call may set or probe for its items, roughly: a new item sets `hashes`
/// bits in the newest layer (up to ~55 at the tightest error rate) after probing each layer.
/// A 1,000-item batch in one call held Redis 50-80 ms, 32 items at the tightest rate ~4 ms;
/// sizing the call by the filter's hashes keeps it near 1-2 ms (`tests/redis_time.rs`). The
/// calls run in order, so flags keep their meaning.
const BITS_PER_CALL: usize = 512;

/// Items per Lua-engine call for filters with these parameters (see [`BITS_PER_CALL`]).
fn items_per_call(params: Params) -> usize {
    let hashes = params
        .layout()
        .iter()
        .map(|l| l.hashes as usize)
        .max()
        .unwrap_or(1);
    (BITS_PER_CALL / hashes.max(1)).clamp(4, 32)
}

static ADD: LazyLock<Script> = script_after!("dedup_common.lua", "dedup_add.lua");
static CHECK: LazyLock<Script> = script_after!("dedup_common.lua", "dedup_check.lua");
static GROW: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("dedup_grow.lua")));

impl RedisStore {
    pub(super) fn layer_keys(&self, filter: &Name, layers: usize) -> Vec<String> {
        (0..layers)
            .map(|i| self.keys.dedup_layer(filter, i))
            .collect()
    }

    /// KEYS and the ARGV before the items of `dedup_add.lua` (when `may_create` is given:
    /// whether an absent filter may be created) or `dedup_check.lua`.
    fn lua_call(&self, b: &Batch<'_>) -> (Vec<String>, Vec<Value>) {
        let layout = b.params.layout();
        let mut keys = vec![self.keys.dedup_meta(b.filter)];
        keys.extend(self.layer_keys(b.filter, layout.len()));
        let mut args = vec![
            Value::from(b.params.capacity.to_string()),
            Value::from(b.params.error_rate_text()),
        ];
        if let Some(create) = b.may_create {
            args.push(Value::from(i64::from(create)));
        }
        args.push(Value::from(b.policy.retention_secs as i64));
        args.push(Value::from(layout.len() as i64));
        args.push(Value::from(LAYER_PIECE_BYTES as i64));
        for l in &layout {
            args.push(Value::from(l.capacity as i64));
            args.push(Value::from(l.bits as i64));
            args.push(Value::from(i64::from(l.hashes)));
        }
        (keys, args)
    }

    /// Lua-engine script calls for the batch, [`items_per_call`] items each, in order:
    /// `dedup_add.lua` when `may_create` is given (whether an absent filter may be created),
    /// else `dedup_check.lua`. A step other than flags (absent, other parameters, full) ends
    /// the batch there.
    pub(super) async fn lua_run(&self, b: Batch<'_>) -> Result<Step<Added>, StoreError> {
        let (keys, head) = self.lua_call(&b);
        let script = if b.may_create.is_some() { &ADD } else { &CHECK };
        let per_call = items_per_call(b.params);
        let mut flags = Vec::with_capacity(b.items.len());
        while flags.len() < b.items.len() {
            let chunk = &b.items[flags.len()..b.items.len().min(flags.len() + per_call)];
            let mut args = head.clone();
            for item in chunk {
                let h = ItemHash::of(item);
                for half in [
                    h.h1 >> 32,
                    h.h1 & 0xffff_ffff,
                    h.h2 >> 32,
                    h.h2 & 0xffff_ffff,
                ] {
                    args.push(Value::from(half as i64));
                }
            }
            let reply: Vec<Value> = self.pool.script(script, keys.clone(), args).await?;
            match LayersReply::parse(&reply)? {
                LayersReply::Flags(f) => flags.extend(f),
                LayersReply::Grow(layer, f) => {
                    flags.extend(f);
                    self.grow_layer(b.filter, b.params, layer, b.policy).await?;
                }
                LayersReply::Absent => return Ok(Step::Absent),
                LayersReply::Stored(p, e) => return Ok(Step::Stored(p, e)),
                LayersReply::Full => return Ok(Step::Done(Added::Full)),
            }
        }
        Ok(Step::Done(Added::Flags(flags)))
    }

    /// Builds layer `layer`: its one key when it fits a piece, else its piece keys
    /// (`<layer key>:<n>`, see `dedup_add.lua`), one call each and in order, since the scripts
    /// take the last piece at its full size to mean that all are built.
    pub(super) async fn grow_layer(
        &self,
        filter: &Name,
        params: Params,
        layer: usize,
        policy: Policy,
    ) -> Result<(), StoreError> {
        for (key, bytes) in self.layer_parts(filter, params, layer) {
            let _: u64 = self
                .pool
                .script(
                    &GROW,
                    vec![key.as_str()],
                    vec![
                        bytes as i64,
                        LAYER_PIECE_BYTES as i64,
                        policy.retention_secs as i64,
                    ],
                )
                .await?;
        }
        Ok(())
    }

    /// The keys layer `layer` is stored in, with their full sizes in bytes.
    pub(super) fn layer_parts(
        &self,
        filter: &Name,
        params: Params,
        layer: usize,
    ) -> Vec<(String, u64)> {
        let bits = params.layer(layer as u32).bits;
        let piece_bits = LAYER_PIECE_BYTES * 8;
        if bits <= piece_bits {
            return vec![(self.keys.dedup_layer(filter, layer), bits.div_ceil(8))];
        }
        (0..bits.div_ceil(piece_bits))
            .map(|n| {
                let in_piece = (bits - n * piece_bits).min(piece_bits);
                (
                    self.keys.dedup_layer_piece(filter, layer, n),
                    in_piece.div_ceil(8),
                )
            })
            .collect()
    }
}

/// What `dedup_add.lua` and `dedup_check.lua` answer.
#[derive(Debug)]
enum LayersReply {
    /// Status 0: per item, whether it was new (add) or may have been seen (check).
    Flags(Vec<bool>),
    /// Status 1: absent, and the call may not create it.
    Absent,
    /// Status 2: the stored parameters differ from the ones sent.
    Stored(Params, Engine),
    /// Status 3: the batch could outgrow the layout; nothing was written.
    Full,
    /// Status 4: stopped before the first item needing layer `.0`, which is not built yet;
    /// the flags of the items before it.
    Grow(usize, Vec<bool>),
}

impl LayersReply {
    fn parse(reply: &[Value]) -> Result<Self, StoreError> {
        Ok(match reply.first().and_then(Value::as_i64) {
            Some(0) => Self::Flags(reply[1..].iter().map(|v| v.as_i64() == Some(1)).collect()),
            Some(1) => Self::Absent,
            Some(2) => stored(reply).map(|(p, e)| Self::Stored(p, e))?,
            Some(3) => Self::Full,
            Some(4) => Self::Grow(
                reply
                    .get(1)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| StoreError::Internal(format!("bad grow reply {reply:?}")))?
                    as usize,
                reply[2..].iter().map(|v| v.as_i64() == Some(1)).collect(),
            ),
            _ => {
                return Err(StoreError::Internal(format!(
                    "unexpected dedup script reply {reply:?}"
                )))
            }
        })
    }
}
