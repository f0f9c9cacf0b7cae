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
//! No call holds Redis for long (README "Redis time per request"): a batch goes
//! [`items_per_call`] items per script (fewer for tighter error rates), and a layer bigger than [`LAYER_PIECE_BYTES`] is kept
//! as piece keys `bf:{filter}:<i>:<n>`, built one per call by `dedup_grow.lua` before a script
//! may use it (the add script stops and says which layer it needs). The RedisBloom engine's `BF.RESERVE` allocates a filter in one call,
//! which the module does itself.

mod native;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock};

use fred::prelude::*;
use fred::types::scripts::Script;
use fred::types::{ClusterHash, CustomCommand};

use crate::store::keys::Keys;
use crate::store::redis::{map_err, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::dedup::logic::{ItemHash, Params};
use crate::dedup::{Added, DedupStore, Engine, FilterInfo, Policy, Reserved};
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

/// Most bytes of a layer one call allocates: a layer of tens of MiB in one SETBIT held Redis
/// ~30 ms, and growing one string in steps reallocates (copies) it, so a bigger layer is kept
/// as piece keys of this size, each built by one call of ~1 ms (`dedup_grow.lua`).
const LAYER_PIECE_BYTES: u64 = 2 << 20;

static ADD: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("dedup_add.lua")));
static CHECK: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("dedup_check.lua")));
static RESERVE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("dedup_reserve.lua")));
static GROW: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("dedup_grow.lua")));

/// Filters whose parameters are remembered before the memory is dropped and rebuilt.
const KNOWN_FILTERS: usize = 10_000;

/// This process's view of dedup on the server.
#[derive(Debug, Default)]
struct DedupState {
    /// The engine new filters get, once detected.
    engine: OnceLock<Engine>,
    /// Metadata key → the parameters and engine it was last seen with.
    known: Mutex<HashMap<String, (Params, Engine)>>,
}

impl Kept for DedupState {}

static DEDUP: Slot<DedupState> = Slot::new();

impl DedupState {
    fn remember(&self, meta: &str, params: Params, engine: Engine) {
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

/// One attempt at an operation, given the parameters the gateway believed in.
pub(super) enum Step<T> {
    Done(T),
    /// No such filter (and this call may not create it).
    Absent,
    /// The filter exists with these parameters and engine instead.
    Stored(Params, Engine),
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
    async fn converge<T, F, Fut>(
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

    fn layer_keys(&self, filter: &Name, layers: usize) -> Vec<String> {
        (0..layers)
            .map(|i| self.keys.dedup_layer(filter, i))
            .collect()
    }

    /// KEYS and the leading ARGV shared by the two Lua-engine scripts.
    fn lua_call(&self, filter: &Name, params: Params) -> (Vec<String>, Vec<Value>) {
        let layout = params.layout();
        let mut keys = vec![self.keys.dedup_meta(filter)];
        keys.extend(self.layer_keys(filter, layout.len()));
        let mut spec = vec![Value::from(layout.len() as i64)];
        for l in &layout {
            spec.push(Value::from(l.capacity as i64));
            spec.push(Value::from(l.bits as i64));
            spec.push(Value::from(i64::from(l.hashes)));
        }
        (keys, spec)
    }

    /// Lua-engine script calls for the batch, [`items_per_call`] items each, in order:
    /// `dedup_add.lua` when `may_create` is given (whether an absent filter may be created),
    /// else `dedup_check.lua`. A step other than flags (absent, other parameters, full) ends
    /// the batch there.
    async fn lua_run(
        &self,
        filter: &Name,
        params: Params,
        may_create: Option<bool>,
        items: &[String],
        policy: Policy,
    ) -> Result<Step<Added>, StoreError> {
        let per_call = items_per_call(params);
        let mut flags = Vec::with_capacity(items.len());
        while flags.len() < items.len() {
            let chunk = &items[flags.len()..items.len().min(flags.len() + per_call)];
            match self
                .lua_call_once(filter, params, may_create, chunk, policy)
                .await?
            {
                LayersReply::Flags(f) => flags.extend(f),
                LayersReply::Grow(layer, f) => {
                    flags.extend(f);
                    self.grow_layer(filter, params, layer, policy).await?;
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
    async fn grow_layer(
        &self,
        filter: &Name,
        params: Params,
        layer: usize,
        policy: Policy,
    ) -> Result<(), StoreError> {
        for (key, bytes) in self.layer_parts(filter, params, layer) {
            let _: u64 = self
                .pool
                .eval(
                    &GROW,
                    vec![key.as_str()],
                    vec![
                        bytes as i64,
                        LAYER_PIECE_BYTES as i64,
                        policy.retention_secs as i64,
                    ],
                )
                .await
                .map_err(map_err)?;
        }
        Ok(())
    }

    /// The keys layer `layer` is stored in, with their full sizes in bytes.
    fn layer_parts(&self, filter: &Name, params: Params, layer: usize) -> Vec<(String, u64)> {
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

    async fn lua_call_once(
        &self,
        filter: &Name,
        params: Params,
        may_create: Option<bool>,
        items: &[String],
        policy: Policy,
    ) -> Result<LayersReply, StoreError> {
        let (keys, spec) = self.lua_call(filter, params);
        let mut args = vec![
            Value::from(params.capacity.to_string()),
            Value::from(params.error_rate_text()),
        ];
        if let Some(create) = may_create {
            args.push(Value::from(i64::from(create)));
        }
        args.push(Value::from(policy.retention_secs as i64));
        let mut spec = spec.into_iter();
        args.extend(spec.next());
        args.push(Value::from(LAYER_PIECE_BYTES as i64));
        args.extend(spec);
        for item in items {
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
        let script = if may_create.is_some() { &ADD } else { &CHECK };
        let reply: Vec<Value> = self.pool.eval(script, keys, args).await.map_err(map_err)?;
        LayersReply::parse(&reply)
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
        let reply: Vec<Value> = self
            .pool
            .eval(&RESERVE, keys, args)
            .await
            .map_err(map_err)?;
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

/// The `{status, capacity, error_rate, engine}` a script reports as stored.
fn stored(reply: &[Value]) -> Result<(Params, Engine), StoreError> {
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
            |params, engine, may_create| async move {
                match engine {
                    Engine::Lua => {
                        self.lua_run(filter, params, Some(may_create), items, policy)
                            .await
                    }
                    _ => {
                        self.native_add(filter, params, may_create, items, policy)
                            .await
                    }
                }
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
                |params, engine, _| async move {
                    match engine {
                        Engine::Lua => self.lua_run(filter, params, None, items, policy).await,
                        _ => self.native_check(filter, params, items, policy).await,
                    }
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
            .at(&meta)
            .map_err(map_err)?
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
    use crate::store::keys::hash_tag;

    #[test]
    fn a_filters_keys_share_a_slot() {
        let keys = Keys::new("gw:");
        let f = Name::try_from("news:eu@1".to_owned()).unwrap();
        let meta = keys.dedup_meta(&f);
        assert_eq!(meta, "gw:bf:{news:eu@1}");
        assert_eq!(keys.dedup_layer(&f, 3), "gw:bf:{news:eu@1}:3");
        assert_eq!(hash_tag(&meta), hash_tag(&keys.dedup_layer(&f, 3)));
        assert_eq!(hash_tag(&meta), hash_tag(&keys.dedup_native(&f)));
    }
}
