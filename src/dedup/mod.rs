//! News dedup on scalable Bloom filters: reserve a filter, add items, check them, and filter a
//! batch down to the items not seen before.
//!
//! Three engines answer the same way: RedisBloom's `BF.*` when the Redis server has the module
//! (detected at start-up), else a Lua engine on plain bitmaps, and the memory backend. The Lua
//! engine and the memory backend share [`logic`] (layer sizing and bit positions), so they
//! agree bit for bit. Filters are created on first write with the configured defaults and
//! expire after the configured idle retention.

mod http;
pub mod logic;
mod memory;
mod redis;
mod settings;

pub use http::{BloomEngine, DedupState, Domain};
pub use settings::{Flags, Settings};

use logic::Params;

use crate::store::error::StoreError;
use crate::types::Name;

/// Which implementation holds a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// RedisBloom's native `BF.*` commands.
    RedisBloom,
    /// The gateway's Lua scripts on plain Redis bitmaps.
    Lua,
    /// The embedded memory backend.
    Memory,
}

impl Engine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RedisBloom => "redisbloom",
            Self::Lua => "lua",
            Self::Memory => "memory",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "redisbloom" => Some(Self::RedisBloom),
            "lua" => Some(Self::Lua),
            "memory" => Some(Self::Memory),
            _ => None,
        }
    }
}

/// A filter as `GET` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterInfo {
    pub params: Params,
    /// Items added (each counted once, when it was definitely new).
    pub items: u64,
    /// Bytes the filter's layers take.
    pub bytes: u64,
    pub layers: u32,
    pub engine: Engine,
}

/// What reserving did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// The filter was new.
    Created,
    /// It existed with the same parameters; nothing changed.
    Unchanged,
    /// It exists with these other parameters; nothing changed.
    Conflict(Params),
}

/// What adding did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// Per item, in order: true when the item was definitely new (an item repeated within the
    /// batch is new at most once, at its first position).
    Flags(Vec<bool>),
    /// The batch could need more layers than [`logic::MAX_FILTER_BITS`] allows; nothing was
    /// written.
    Full,
}

/// How filters are created and kept.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Parameters of a filter created on first use.
    pub defaults: Params,
    /// Idle time, in seconds, after which a filter expires.
    pub retention_secs: u64,
}

crate::store::store_trait! {
    /// What a dedup backend must do. Every method is one logical store operation.
    pub(crate) trait DedupStore {
        /// Creates `filter` with `params` unless it exists.
        async fn dedup_reserve(&self, filter: &Name, params: Params, policy: Policy)
            -> Result<Reserved, StoreError> = "dedup.reserve_filter";
        /// Adds `items` in order, creating the filter with the defaults on first use.
        async fn dedup_add(&self, filter: &Name, items: &[String], policy: Policy)
            -> Result<Added, StoreError> = "dedup.add_to_filter";
        /// Per item: whether it may have been added (false: definitely not). An unknown filter
        /// has seen nothing and is not created.
        async fn dedup_check(&self, filter: &Name, items: &[String], policy: Policy)
            -> Result<Vec<bool>, StoreError> = "dedup.check_in_filter";
        /// The filter's parameters and size, or `None` when it does not exist.
        async fn dedup_info(&self, filter: &Name) -> Result<Option<FilterInfo>, StoreError> = "dedup.filter_info";
        /// The engine new filters get on this store (detected once on Redis), for `/readyz`.
        async fn dedup_engine(&self) -> Result<Engine, StoreError> = _;
    }
}
