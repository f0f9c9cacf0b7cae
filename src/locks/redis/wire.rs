//! What the lock backend's calls share: the scripts, the keys of a lock, and the decoding of
//! script replies.

use std::sync::LazyLock;

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::keys::Keys;
use crate::store::redis::text;

use crate::locks::{Attempt, Lock};
use crate::store::error::StoreError;
use crate::types::Name;

pub(super) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_acquire.lua")));
pub(super) static RENEW: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_renew.lua")));
pub(super) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_release.lua")));
pub(super) static INSPECT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_inspect.lua")));

pub(super) fn number<T: std::str::FromStr>(v: Option<&Value>) -> Result<T, StoreError> {
    text(v)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| StoreError::Internal(format!("a lock script returned {v:?}")))
}

/// One acquisition's reply within `lock_acquire.lua`'s, whose clock read `now_ms`: the ms
/// left of another owner's lease (an integer), or the token (a string) of a lease of `ttl_ms`
/// from then.
pub(super) fn attempt(
    owner: Name,
    ttl_ms: u64,
    now_ms: i64,
    reply: &Value,
) -> Result<Attempt, StoreError> {
    if let Value::Integer(left) = reply {
        return Ok(Attempt::Held {
            retry_after_ms: (*left).max(1) as u64,
        });
    }
    Ok(Attempt::Acquired(Lock {
        owner,
        token: number(Some(reply))?,
        expires_at_ms: now_ms + ttl_ms as i64,
    }))
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A lock: "<lease deadline, ms> <token> <owner>", the token outliving the lease by
    /// [`FENCE_GRACE_MS`](crate::locks::logic::FENCE_GRACE_MS) as the name's fencing counter
    /// (`lock_acquire.lua`).
    pub(crate) fn lock(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}", self.prefix)
    }

    /// The sharded pub/sub channel a lock's releases are announced on, under the lock's hash
    /// tag so `SPUBLISH` from the release script stays in its slot (a channel, not a key).
    pub(crate) fn lock_released_channel(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}:released", self.prefix)
    }
}
