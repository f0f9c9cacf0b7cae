//! Distributed locks with fencing tokens (API.md "Distributed locks"): `SET NX PX`, renewal
//! and release by compare-and-delete, each one atomic store step.
//!
//! A lock name owns two keys under one hash tag: the holder (`lk:{name}`, "owner\ntoken",
//! expiring with the lease) and the fencing counter (`lk:{name}:fence`, the last token handed
//! out, expiring [`logic::FENCE_GRACE_MS`] after the lease so it always outlives the holder).
//! Tokens are derived by [`logic::next_token`] so that they strictly increase per name and are
//! never reused, even once that counter has expired (see there for the clock assumption).
//!
//! Waiting acquisition ([`acquire`]) is woken by releases ([`wake::Wakeups`]: a pub/sub
//! message on Redis, a direct wake-up in memory) and otherwise retries when the holder's
//! lease runs out, since an expiry sends no message; it never polls in between.

mod http;
pub mod logic;
pub mod wake;

use std::time::Duration;

pub use http::router;
pub use wake::Watch;

use crate::store::error::StoreError;
use crate::types::Name;

/// A held lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub owner: Name,
    /// The fencing token of this acquisition.
    pub token: u64,
    /// When the lease ends, ms since the epoch on the store's clock.
    pub expires_at_ms: i64,
}

/// What one acquisition attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Taken now, or extended because `owner` already held it (same token).
    Acquired(Lock),
    /// Held by another owner for this many more milliseconds.
    Held { retry_after_ms: u64 },
}

/// What a lock backend must do; every method is one atomic step.
pub(crate) trait LockStore {
    /// `SET NX PX` with a fresh fencing token, or an extension (same token) when `owner`
    /// already holds it.
    async fn lock_acquire(
        &self,
        name: &Name,
        owner: &Name,
        ttl_ms: u64,
    ) -> Result<Attempt, StoreError>;
    /// Extends the lease when `owner` and `token` still hold it; `None` when they do not.
    async fn lock_renew(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
        ttl_ms: u64,
    ) -> Result<Option<Lock>, StoreError>;
    /// Deletes the lock when `owner` and `token` still hold it (and wakes its waiters);
    /// `false` when they do not.
    async fn lock_release(&self, name: &Name, owner: &Name, token: u64)
        -> Result<bool, StoreError>;
    /// The current holder, if any.
    async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError>;
    /// Starts listening for releases of `name`: any release after this call wakes the watch.
    async fn lock_watch(&self, name: &Name) -> Watch;
}

/// Acquires `name` for `owner`, waiting up to `wait` for another holder to let go: woken by a
/// release, or retried when the holder's lease ends, and once more at the deadline.
pub(crate) async fn acquire<S: LockStore>(
    store: &S,
    name: &Name,
    owner: &Name,
    ttl_ms: u64,
    wait: Duration,
) -> Result<Attempt, StoreError> {
    let deadline = tokio::time::Instant::now() + wait;
    // Made on the first refusal and kept: it hears every release from then on.
    let mut watch: Option<Watch> = None;
    loop {
        let attempt = store.lock_acquire(name, owner, ttl_ms).await?;
        let Attempt::Held { retry_after_ms } = attempt else {
            return Ok(attempt);
        };
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(attempt);
        }
        let Some(watch) = watch.as_mut() else {
            // Listen, then try again at once, so a release just before listening is not missed.
            watch = Some(store.lock_watch(name).await);
            continue;
        };
        let lease_end = now + Duration::from_millis(retry_after_ms.max(1));
        tokio::select! {
            () = watch.released() => {}
            () = tokio::time::sleep_until(lease_end.min(deadline)) => {}
        }
    }
}
