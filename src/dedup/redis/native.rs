//! Dedup on RedisBloom's `BF.*` commands, for servers that have the module (see `params.rs`
//! for the engine choice and the metadata both engines share).

use std::collections::HashMap;
use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand};

use super::params::stored;
use super::wire::{Batch, Step};
use crate::store::redis::{map_err, RedisStore};

use crate::dedup::logic::Params;
use crate::dedup::{Added, Policy};
use crate::store::error::StoreError;
use crate::types::Name;

/// RedisBloom tightens each new layer's error rate by 0.5, so its compound rate approaches
/// twice the first layer's: reserving at half the requested rate keeps the whole filter at it.
const NATIVE_FIRST_LAYER_SHARE: f64 = 0.5;

/// Items per `BF.INSERT`/`BF.MEXISTS` (one run of `dedup_native.lua`), so a 1,000-item batch of
/// 512-byte items is several short calls, in order (docs/performance.md "Redis time per
/// request").
const NATIVE_ITEMS_PER_CALL: usize = 128;

static NATIVE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("dedup_native.lua")));

impl RedisStore {
    /// Creates the RedisBloom filter of a newly reserved filter.
    pub(super) async fn native_reserve(
        &self,
        filter: &Name,
        params: Params,
        policy: Policy,
    ) -> Result<(), StoreError> {
        let key = self.keys.dedup_native(filter);
        let args = vec![
            Value::from(key.clone()),
            Value::from(native_error_rate(params)),
            Value::from(params.capacity as i64),
            Value::from("EXPANSION"),
            Value::from(2),
        ];
        match self.native("BF.RESERVE", args).await {
            // A concurrent first add created it (with these same parameters).
            Err(StoreError::Internal(why)) if why.contains("exists") => {}
            other => {
                other?;
            }
        }
        self.touch_native(&key, policy).await
    }

    /// `BF.INFO`'s fields by name; empty while a reservation's `BF.RESERVE` is not through.
    pub(super) async fn native_info(
        &self,
        filter: &Name,
    ) -> Result<HashMap<String, i64>, StoreError> {
        let key = self.keys.dedup_native(filter);
        match self.native("BF.INFO", vec![Value::from(key)]).await {
            Ok(reply) => Ok(info_fields(reply)),
            Err(StoreError::Internal(_)) => Ok(HashMap::new()),
            Err(e) => Err(e),
        }
    }

    /// One RedisBloom command; its first argument is the key it routes by.
    async fn native(&self, command: &'static str, args: Vec<Value>) -> Result<Value, StoreError> {
        let cmd = CustomCommand::new_static(command, ClusterHash::FirstKey, false);
        self.pool.custom(cmd, args).await.map_err(map_err)
    }

    /// Adds (`BF.INSERT`, when `may_create` is given: whether an absent filter may be created)
    /// or checks (`BF.MEXISTS`) the batch, [`NATIVE_ITEMS_PER_CALL`] items per call, in order:
    /// each call one run of `dedup_native.lua`, which checks the metadata, runs the command
    /// and resets the TTLs.
    pub(super) async fn native_run(&self, b: Batch<'_>) -> Result<Step<Added>, StoreError> {
        let keys = vec![
            self.keys.dedup_meta(b.filter),
            self.keys.dedup_native(b.filter),
        ];
        let head = [
            Value::from(b.params.capacity.to_string()),
            Value::from(b.params.error_rate_text()),
            Value::from(b.policy.retention_secs as i64),
            Value::from(if b.may_create.is_some() {
                "add"
            } else {
                "check"
            }),
            Value::from(i64::from(b.may_create.unwrap_or(false))),
            Value::from(native_error_rate(b.params)),
        ];
        let mut out = Vec::with_capacity(b.items.len());
        for part in b.items.chunks(NATIVE_ITEMS_PER_CALL) {
            let mut args = head.to_vec();
            args.extend(part.iter().map(|i| Value::from(i.as_str())));
            let reply: Vec<Value> = self.pool.script(&NATIVE, keys.clone(), args).await?;
            match reply.first().and_then(Value::as_i64) {
                Some(0) => out.extend(flags(Value::Array(reply[1..].to_vec()), part.len())?),
                // Only the first call can find it absent or changed: the batch is retried whole.
                Some(1) => return Ok(Step::Absent),
                Some(2) => {
                    let (params, engine) = stored(&reply)?;
                    return Ok(Step::Stored(params, engine));
                }
                Some(3) => {
                    let command = reply.get(1).and_then(Value::as_string).unwrap_or_default();
                    return Err(StoreError::Unsupported(command));
                }
                _ => {
                    return Err(StoreError::Internal(format!(
                        "unexpected dedup_native.lua reply {reply:?}"
                    )))
                }
            }
        }
        Ok(Step::Done(Added::Flags(out)))
    }

    async fn touch_native(&self, key: &str, policy: Policy) -> Result<(), StoreError> {
        let _: i64 = self
            .pool
            .at(key)?
            .expire(key, policy.retention_secs as i64, None)
            .await
            .map_err(map_err)?;
        Ok(())
    }
}

/// The error rate RedisBloom's first layer gets (see [`NATIVE_FIRST_LAYER_SHARE`]).
fn native_error_rate(params: Params) -> String {
    (params.error_rate * NATIVE_FIRST_LAYER_SHARE).to_string()
}

/// `BF.INSERT`/`BF.MEXISTS` replies: one 0/1 per item.
fn flags(reply: Value, expected: usize) -> Result<Vec<bool>, StoreError> {
    let Value::Array(values) = reply else {
        return Err(StoreError::Internal(format!(
            "unexpected RedisBloom reply {reply:?}"
        )));
    };
    if values.len() != expected {
        return Err(StoreError::Internal(format!(
            "RedisBloom answered {} flags for {expected} items",
            values.len()
        )));
    }
    values
        .iter()
        .map(|v| match v {
            Value::Integer(i) => Ok(*i == 1),
            Value::Boolean(b) => Ok(*b),
            other => Err(StoreError::Internal(format!(
                "unexpected RedisBloom flag {other:?}"
            ))),
        })
        .collect()
}

/// `BF.INFO`'s `name, value, ...` pairs (or a map under RESP3), by name.
fn info_fields(reply: Value) -> HashMap<String, i64> {
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Array(values) => {
            let mut it = values.into_iter();
            std::iter::from_fn(|| Some((it.next()?, it.next()?))).collect()
        }
        Value::Map(map) => map
            .inner()
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
        _ => Vec::new(),
    };
    pairs
        .into_iter()
        .filter_map(|(k, v)| Some((k.as_string()?, v.as_i64()?)))
        .collect()
}
