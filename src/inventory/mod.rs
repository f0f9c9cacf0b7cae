//! The operator's inventory (docs/inventory.md): what the store holds under the gateway's
//! prefix, key by key, with each key's kind, the resource that owns it, its type, its memory
//! and its TTL; walked with `SCAN` a bounded step at a time (never `KEYS`), across every master
//! of a Cluster with one cursor; and the largest keys, sampled the way `redis-cli --bigkeys`
//! samples them.
//!
//! The domains spell their own keys (each in the `impl Keys` block of its Redis backend); this
//! domain reads those spellings back ([`logic::owner`]), and a test of its Redis backend holds
//! the two together, so the arrow runs from here to the domains and never back.

mod http;
pub mod logic;
mod memory;
mod redis;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use http::{Domain, InventoryState};
pub use logic::Cursor;

use crate::store::error::StoreError;

/// A kind of key: the resource family a key belongs to (docs/inventory.md "Every kind and its
/// keys"). `other` is a key under the prefix that no kind spells: a replica-wait barrier, or a
/// key of another version of the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = InventoryKind)]
pub enum Kind {
    Voucher,
    Queue,
    Filter,
    Layer,
    Uv,
    Checkin,
    Ratelimit,
    Lock,
    Policy,
    Other,
}

/// Who a key belongs to, read off its spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub kind: Kind,
    /// The resource as its routes name it (a voucher id, a queue, a filter, a page, a user
    /// id…); `None` for a key the whole kind shares (the voucher registry, the overrides).
    pub resource: Option<String>,
    /// The caller namespace the resource lives in (`c:<client id>`, `ip:<address>`), for the
    /// kinds named inside one; `None` in the shared namespace.
    pub namespace: Option<String>,
    /// What the key holds of its resource (`buyers`, `orders`, `idempotency`, `layer`…).
    pub part: &'static str,
}

/// One key as the store measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The whole key, prefix included, as `redis-cli` names it.
    pub key: String,
    pub owner: Owner,
    /// `TYPE`'s answer: `string`, `hash`, `zset`, `stream`, a module's type (`MBbloom--`)…
    pub value_type: String,
    /// `MEMORY USAGE … SAMPLES 5`: bytes, estimated from 5 elements for a collection.
    pub bytes: Option<u64>,
    /// `PTTL`; `None` for a key without expiry.
    pub ttl_ms: Option<i64>,
}

/// One step of a walk: the keys it found, measured, and where the walk goes on (`None`: done).
#[derive(Debug, Clone, Default)]
pub struct Scanned {
    pub keys: Vec<Measured>,
    pub next: Option<Cursor>,
}

/// The largest keys found within one request's budget.
#[derive(Debug, Clone, Default)]
pub struct Biggest {
    /// Largest first.
    pub keys: Vec<Measured>,
    /// Keys measured (of the kind asked).
    pub examined: u64,
    /// Where the walk stopped, when the budget ran out first (`None`: it saw every key).
    pub next: Option<Cursor>,
}

/// A walk the store cannot go on with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The cursor is not one this store hands out (a Cluster's on a single server, or the
    /// reverse): what is wrong with it.
    Cursor(String),
    /// The cursor names a Cluster master that serves no slots now (`host:port`): it failed
    /// over or left, and its `SCAN` cursor means nothing elsewhere.
    NodeGone(String),
}

/// How much of the keyspace one step of the largest-keys walk examines (`SCAN`'s `COUNT`).
pub const BIG_KEYS_COUNT: u32 = 1000;
/// Most keys one largest-keys request measures (docs/inventory.md "The largest keys").
pub const BIG_KEYS_BUDGET: u64 = 5_000;
/// Most `SCAN` steps one largest-keys request makes, for a keyspace where few keys match.
pub const BIG_KEYS_SCANS: u32 = 32;

crate::store::store_trait! {
    /// What an inventory backend must do.
    pub(crate) trait InventoryStore {
        /// One step of a walk: `SCAN` from `from` (the first master's start when `None`) with
        /// `MATCH` the glob of `kind` (every key under the prefix when `None`) and `COUNT
        /// count`, on the master the cursor names; then, in one pipeline, the `TYPE`, `MEMORY
        /// USAGE` and `PTTL` of each key of `kind` it found. A key gone meanwhile is left out.
        async fn inventory_scan(&self, from: Option<&Cursor>, kind: Option<Kind>, count: u32)
            -> Result<Result<Scanned, Refused>, StoreError> = "inventory.scan";

        /// The `limit` largest keys of `kind`, walking from `from` in steps of
        /// [`BIG_KEYS_COUNT`] until the walk ends, [`BIG_KEYS_BUDGET`] keys are measured or
        /// [`BIG_KEYS_SCANS`] steps are made.
        async fn inventory_biggest(&self, from: Option<&Cursor>, kind: Option<Kind>, limit: usize)
            -> Result<Result<Biggest, Refused>, StoreError>
        {
            let mut biggest = Biggest::default();
            let mut at = from.cloned();
            for _ in 0..BIG_KEYS_SCANS {
                let step = match self.inventory_scan(at.as_ref(), kind, BIG_KEYS_COUNT).await? {
                    Ok(step) => step,
                    Err(refused) => return Ok(Err(refused)),
                };
                biggest.examined += step.keys.len() as u64;
                logic::keep_largest(&mut biggest.keys, step.keys, limit);
                at = step.next;
                if at.is_none() || biggest.examined >= BIG_KEYS_BUDGET {
                    break;
                }
            }
            biggest.next = at;
            Ok(Ok(biggest))
        }
    }
}
