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
//! than [`wire::LAYER_PIECE_BYTES`] is kept as piece keys `bf:{filter}:<i>:<n>`, built one per
//! call by `dedup_grow.lua` before a script may use it (the add script stops and says which
//! layer it needs). The RedisBloom engine's `BF.RESERVE` allocates a filter in one call, which
//! the module does itself.
//!
//! Here: the store trait. [`params`]: the engine detection, the remembered parameters, the
//! retry and the shared metadata; [`lua`]: the Lua engine and its layers; [`native`]: the
//! RedisBloom engine; [`wire`]: the keys and the batch the others share.

mod lua;
mod native;
mod params;
mod wire;

use fred::prelude::*;

use crate::store::redis::{map_err, RedisStore};

use crate::dedup::logic::Params;
use crate::dedup::{Added, DedupStore, Engine, FilterInfo, Policy, Reserved};
use crate::store::error::StoreError;
use crate::types::Name;
use params::{stored, MetaReply, DEDUP};
use wire::{Batch, Step};

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
