//! What this process knows of dedup on the server, and how a call follows what the server
//! reports: the engine new filters get (detected once), the parameters of filters it has used
//! (remembered, at most [`KNOWN_FILTERS`]), the retry when a script reports others stored, and
//! the metadata hash both engines share (`dedup_reserve.lua`, read back by [`stored`]).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock};

use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand};

use super::wire::{Step, LAYER_PIECE_BYTES};
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::dedup::logic::Params;
use crate::dedup::{Engine, Policy};
use crate::store::error::StoreError;
use crate::types::Name;

static RESERVE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("dedup_reserve.lua")));

/// Filters whose parameters are remembered before the memory is dropped and rebuilt.
const KNOWN_FILTERS: usize = 10_000;

/// This process's view of dedup on the server.
#[derive(Debug, Default)]
pub(super) struct DedupState {
    /// The engine new filters get, once detected.
    engine: OnceLock<Engine>,
    /// Metadata key → the parameters and engine it was last seen with.
    known: Mutex<HashMap<String, (Params, Engine)>>,
}

impl Kept for DedupState {}

pub(super) static DEDUP: Slot<DedupState> = Slot::new();

impl DedupState {
    pub(super) fn remember(&self, meta: &str, params: Params, engine: Engine) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.len() >= KNOWN_FILTERS && !known.contains_key(meta) {
            known.clear();
        }
        known.insert(meta.to_owned(), (params, engine));
    }

    fn recall(&self, meta: &str) -> Option<(Params, Engine)> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.get(meta).copied()
    }

    fn forget(&self, meta: &str) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.remove(meta);
    }
}

impl RedisStore {
    /// The engine new filters get, detected once: RedisBloom when `BF.ADD` exists.
    pub(super) async fn bloom_engine(&self) -> Result<Engine, StoreError> {
        let state = self.kept(&DEDUP);
        if let Some(engine) = state.engine.get() {
            return Ok(*engine);
        }
        let cmd = CustomCommand::new_static("COMMAND", ClusterHash::Random, false);
        let engine = match self
            .pool
            .custom::<Value, _>(cmd, vec!["INFO", "BF.ADD"])
            .await
        {
            // `[nil]` when the server has no such command.
            Ok(Value::Array(entries)) if entries.first().is_some_and(|e| !e.is_null()) => {
                Engine::RedisBloom
            }
            Ok(_) => Engine::Lua,
            Err(e) => match map_err(e) {
                // A server that refuses COMMAND (ACLs, renamed commands) still runs Lua.
                StoreError::Internal(why) => {
                    tracing::warn!(%why, "cannot ask Redis for BF.ADD; using the Lua Bloom engine");
                    Engine::Lua
                }
                other => return Err(other),
            },
        };
        // Concurrent first calls may both detect; they find the same engine.
        let _ = state.engine.set(engine);
        tracing::info!(engine = engine.as_str(), "dedup Bloom engine");
        Ok(engine)
    }

    /// Where this call should start: the remembered parameters, else the defaults on the
    /// server's engine.
    async fn start(&self, meta: &str, policy: Policy) -> Result<(Params, Engine), StoreError> {
        match self.kept(&DEDUP).recall(meta) {
            Some(known) => Ok(known),
            None => Ok((policy.defaults, self.bloom_engine().await?)),
        }
    }

    /// Runs `attempt` with the believed parameters, following what the store reports.
    pub(super) async fn converge<T, F, Fut>(
        &self,
        meta: &str,
        policy: Policy,
        absent: impl Fn() -> Option<T>,
        attempt: F,
    ) -> Result<T, StoreError>
    where
        F: Fn(Params, Engine, bool) -> Fut,
        Fut: std::future::Future<Output = Result<Step<T>, StoreError>>,
    {
        let server = self.bloom_engine().await?;
        let (mut params, mut engine) = self.start(meta, policy).await?;
        for _ in 0..3 {
            let may_create = params == policy.defaults && engine == server;
            match attempt(params, engine, may_create).await? {
                Step::Done(out) => {
                    self.kept(&DEDUP).remember(meta, params, engine);
                    return Ok(out);
                }
                Step::Absent => {
                    self.kept(&DEDUP).forget(meta);
                    if let Some(out) = absent() {
                        return Ok(out);
                    }
                    (params, engine) = (policy.defaults, server);
                }
                Step::Stored(p, e) => {
                    self.kept(&DEDUP).remember(meta, p, e);
                    (params, engine) = (p, e);
                }
            }
        }
        Err(StoreError::Internal(format!(
            "dedup filter {meta} kept changing parameters"
        )))
    }

    /// Runs `dedup_reserve.lua`: creates the metadata (and a Lua filter's first layer) if
    /// absent and allowed, resets the TTLs, and reports what is stored.
    pub(super) async fn reserve_meta(
        &self,
        filter: &Name,
        params: Params,
        engine: Engine,
        may_create: bool,
        policy: Policy,
    ) -> Result<MetaReply, StoreError> {
        // Both engines' data keys, so the TTLs stay in step whichever engine the stored
        // filter turns out to use.
        let layers = params.layout().len();
        let mut keys = vec![self.keys.dedup_meta(filter)];
        keys.extend(self.layer_keys(filter, layers));
        keys.push(self.keys.dedup_native(filter));
        // Piece keys of big layers too, so their TTLs move with the rest.
        for layer in 0..layers {
            let parts = self.layer_parts(filter, params, layer);
            if parts.len() > 1 {
                keys.extend(parts.into_iter().map(|(key, _)| key));
            }
        }
        let first_bits = match engine {
            Engine::Lua => params.layer(0).bits,
            _ => 0,
        };
        let args = vec![
            Value::from(params.capacity.to_string()),
            Value::from(params.error_rate_text()),
            Value::from(engine.as_str()),
            Value::from(policy.retention_secs as i64),
            Value::from(first_bits as i64),
            Value::from(i64::from(may_create)),
            Value::from(LAYER_PIECE_BYTES as i64),
        ];
        let reply: Vec<Value> = self.pool.script(&RESERVE, keys, args).await?;
        MetaReply::parse(&reply)
    }
}

/// What `dedup_reserve.lua` answers (its status, then the parameters as stored).
#[derive(Debug)]
pub(super) enum MetaReply {
    /// Status 0: created with these.
    Created(Params, Engine),
    /// Status 1: existed with the same parameters.
    Same(Params, Engine),
    /// Status 2: existed with these other parameters.
    Other(Params, Engine),
    /// Status 3: absent, and the call may not create it.
    Absent,
}

impl MetaReply {
    fn parse(reply: &[Value]) -> Result<Self, StoreError> {
        Ok(match reply.first().and_then(Value::as_i64) {
            Some(0) => stored(reply).map(|(p, e)| Self::Created(p, e))?,
            Some(1) => stored(reply).map(|(p, e)| Self::Same(p, e))?,
            Some(2) => stored(reply).map(|(p, e)| Self::Other(p, e))?,
            Some(3) => Self::Absent,
            _ => {
                return Err(StoreError::Internal(format!(
                    "unexpected dedup reserve reply {reply:?}"
                )))
            }
        })
    }

    /// The parameters and engine stored, unless the filter is absent.
    pub(super) fn stored(&self) -> Option<(Params, Engine)> {
        match *self {
            Self::Created(p, e) | Self::Same(p, e) | Self::Other(p, e) => Some((p, e)),
            Self::Absent => None,
        }
    }
}

/// The `{status, capacity, error_rate, engine}` a script reports as stored.
pub(super) fn stored(reply: &[Value]) -> Result<(Params, Engine), StoreError> {
    let bad = || StoreError::Internal(format!("unreadable dedup metadata {reply:?}"));
    let capacity = reply
        .get(1)
        .and_then(Value::as_string)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let error_rate = reply
        .get(2)
        .and_then(Value::as_string)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let engine = reply
        .get(3)
        .and_then(Value::as_string)
        .and_then(|s| Engine::parse(&s))
        .ok_or_else(bad)?;
    Ok((
        Params {
            capacity,
            error_rate,
        },
        engine,
    ))
}
