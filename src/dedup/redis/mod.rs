//! Dedup on Redis: RedisBloom's `BF.*` when the server has the module, else the Lua engine on
//! plain bitmaps (`dedup_add.lua`, `dedup_check.lua`).
//!
//! Both engines keep the filter's parameters in `bf:{filter}` (`dedup_reserve.lua` creates it),
//! so `PUT` can answer 200/409 and `GET` can report them; the data lives beside it under the
//! same hash tag: layers `bf:{filter}:<i>` (Lua) or `bf:{filter}:rb` (RedisBloom). A filter
//! keeps the engine it was created with, even if the server gains or loses the module later.
//!
//! The Lua scripts need each layer's size, which follows from the filter's parameters, so this
//! process remembers the parameters of filters it has used. A script that finds others stored
//! (the filter expired and was reserved anew, or another gateway reserved it) says so, and the
//! call is retried once with what it reported.
//!
//! No call holds Redis for long (docs/performance.md "Redis time per request"): a batch goes
//! [`lua::items_per_call`] items per script (fewer for tighter error rates), and a layer bigger
//! than [`LAYER_PIECE_BYTES`] is kept as piece keys `bf:{filter}:<i>:<n>`, built one per
//! call by `dedup_grow.lua` before a script may use it (the add script stops and says which
//! layer it needs). The RedisBloom engine's `BF.RESERVE` allocates a filter in one call, which
//! the module does itself.
//!
//! Here: the store trait and the keys. [`params`]: the engine detection, the remembered
//! parameters, the retry and the shared metadata; [`lua`]: the Lua engine and its layers;
//! [`native`]: the RedisBloom engine.

mod lua;
mod native;
mod params;

use fred::prelude::*;

use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};

use crate::dedup::logic::Params;
use crate::dedup::{Added, DedupStore, Engine, FilterInfo, Policy, Reserved};
use crate::store::error::StoreError;
use crate::types::Name;
use params::{stored, MetaReply, DEDUP};

/// Most bytes of a layer one call allocates: a layer of tens of MiB in one SETBIT held Redis
/// ~30 ms, and growing one string in steps reallocates (copies) it, so a bigger layer is kept
/// as piece keys of this size, each built by one call of ~1 ms (`dedup_grow.lua`).
const LAYER_PIECE_BYTES: u64 = 2 << 20;

/// One attempt at an operation, given the parameters the gateway believed in.
pub(super) enum Step<T> {
    Done(T),
    /// No such filter (and this call may not create it).
    Absent,
    /// The filter exists with these parameters and engine instead.
    Stored(Params, Engine),
}

/// A batch to add or check, on a filter with the parameters the gateway believes it has.
#[derive(Debug, Clone, Copy)]
pub(super) struct Batch<'a> {
    filter: &'a Name,
    params: Params,
    /// Adding: whether an absent filter may be created. `None`: checking.
    may_create: Option<bool>,
    items: &'a [String],
    policy: Policy,
}

impl RedisStore {
    /// Adds or checks the batch on the filter's engine.
    async fn run(&self, engine: Engine, batch: Batch<'_>) -> Result<Step<Added>, StoreError> {
        match engine {
            Engine::Lua => self.lua_run(batch).await,
            _ => self.native_run(batch).await,
        }
    }
}

impl DedupStore for RedisStore {
    async fn dedup_reserve(
        &self,
        filter: &Name,
        params: Params,
        policy: Policy,
    ) -> Result<Reserved, StoreError> {
        let engine = self.bloom_engine().await?;
        let meta = self.keys.dedup_meta(filter);
        let reply = self
            .reserve_meta(filter, params, engine, true, policy)
            .await?;
        let (stored_params, stored_engine) = reply.stored().unwrap_or((params, engine));
        self.kept(&DEDUP)
            .remember(&meta, stored_params, stored_engine);
        match reply {
            MetaReply::Created(..) => {
                if engine == Engine::RedisBloom {
                    self.native_reserve(filter, params, policy).await?;
                } else {
                    self.grow_layer(filter, params, 0, policy).await?;
                }
                Ok(Reserved::Created)
            }
            MetaReply::Same(..) => Ok(Reserved::Unchanged),
            MetaReply::Other(..) | MetaReply::Absent => Ok(Reserved::Conflict(stored_params)),
        }
    }

    async fn dedup_add(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Added, StoreError> {
        let meta = self.keys.dedup_meta(filter);
        self.converge(
            &meta,
            policy,
            || None,
            |params, engine, may_create| {
                let batch = Batch {
                    filter,
                    params,
                    may_create: Some(may_create),
                    items,
                    policy,
                };
                self.run(engine, batch)
            },
        )
        .await
    }

    async fn dedup_check(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Vec<bool>, StoreError> {
        let meta = self.keys.dedup_meta(filter);
        let seen = self
            .converge(
                &meta,
                policy,
                || Some(Added::Flags(vec![false; items.len()])),
                |params, engine, _| {
                    let batch = Batch {
                        filter,
                        params,
                        may_create: None,
                        items,
                        policy,
                    };
                    self.run(engine, batch)
                },
            )
            .await?;
        match seen {
            Added::Flags(seen) => Ok(seen),
            Added::Full => Err(StoreError::Internal(
                "a check reported a full filter".to_owned(),
            )),
        }
    }

    async fn dedup_engine(&self) -> Result<Engine, StoreError> {
        self.bloom_engine().await
    }

    async fn dedup_info(&self, filter: &Name) -> Result<Option<FilterInfo>, StoreError> {
        let meta = self.keys.dedup_meta(filter);
        let fields: Vec<Option<String>> = self
            .pool
            .at(&meta)?
            .hmget(
                &meta,
                vec!["capacity", "error_rate", "engine", "layers", "items"],
            )
            .await
            .map_err(map_err)?;
        let [Some(capacity), Some(error_rate), Some(engine), layers, items] =
            <[Option<String>; 5]>::try_from(fields).unwrap_or_default()
        else {
            return Ok(None);
        };
        let reply = vec![
            Value::Null,
            Value::from(capacity),
            Value::from(error_rate),
            Value::from(engine),
        ];
        let (params, engine) = stored(&reply)?;
        let number = |v: Option<String>| v.and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
        if engine == Engine::RedisBloom {
            let info = self.native_info(filter).await?;
            let get = |name: &str| info.get(name).copied().unwrap_or(0).max(0) as u64;
            return Ok(Some(FilterInfo {
                params,
                items: get("Number of items inserted"),
                bytes: get("Size"),
                layers: get("Number of filters") as u32,
                engine,
            }));
        }
        let layers = number(layers) as usize;
        let layout = params.layout();
        Ok(Some(FilterInfo {
            params,
            items: number(items),
            bytes: layout.iter().take(layers).map(|l| l.bytes()).sum(),
            layers: layers as u32,
            engine,
        }))
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A dedup filter's metadata hash: parameters, engine, layer and item counts.
    pub(crate) fn dedup_meta(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}", self.prefix)
    }

    /// Layer `i` (from 0) of a Lua-engine dedup filter: a plain bitmap.
    pub(crate) fn dedup_layer(&self, filter: &Name, i: usize) -> String {
        format!("{}bf:{{{filter}}}:{i}", self.prefix)
    }

    /// Piece `n` of a dedup layer too big for one key (`dedup_add.lua`), same hash tag.
    pub(crate) fn dedup_layer_piece(&self, filter: &Name, i: usize, n: u64) -> String {
        format!("{}bf:{{{filter}}}:{i}:{n}", self.prefix)
    }

    /// The RedisBloom filter behind a native-engine dedup filter.
    pub(crate) fn dedup_native(&self, filter: &Name) -> String {
        format!("{}bf:{{{filter}}}:rb", self.prefix)
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::assert_one_slot;
    use crate::types::testing::name;

    #[test]
    fn a_filters_keys_share_a_slot() {
        let (keys, f) = (Keys::new("gw:"), name("news:eu@1"));
        let all = [
            keys.dedup_meta(&f),
            keys.dedup_layer(&f, 3),
            keys.dedup_native(&f),
        ];
        assert_one_slot("news:eu@1", "gw:bf:{news:eu@1}", &all);
        assert_eq!(all[1], "gw:bf:{news:eu@1}:3");
    }
}
