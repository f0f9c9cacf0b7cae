//! Distributed locks with fencing tokens (docs/api.md "Distributed locks"): a lease per name,
//! renewal and release only by its holder, each one atomic store step.
//!
//! A lock name owns one key on Redis (`lk:{name}`, docs/locks.md "Key layout"): the lease's
//! deadline, the owner and the last token handed out, which is the name's fencing counter; the
//! key lives [`logic::FENCE_GRACE_MS`] past the lease so the counter outlives the lease. Tokens
//! are derived by [`logic::next_token`] so that they strictly increase per name and are never
//! reused, even once that counter has expired (see there for the clock assumption).
//!
//! Waiting acquisition ([`acquire`]) is woken by releases ([`wake::Wakeups`]: a pub/sub
//! message on Redis, a direct wake-up in memory) and otherwise retries when the holder's
//! lease runs out, since an expiry sends no message; it never polls in between. A release or
//! a lease's end sends one waiting acquisition per process to try, not all (a lock serves one
//! of them), and at most [`MAX_WAITING_ACQUISITIONS`] wait on one lock in one process.

mod http;
pub mod logic;
mod memory;
mod redis;
pub mod wake;

use std::time::Duration;

pub use http::{Domain, LocksState};
pub use wake::Watch;

use crate::store::error::StoreError;
use crate::types::Name;
use crate::wait::{wait_in_room, Look};

/// Acquisitions that may wait (`wait_ms`) on one lock in one gateway process at once; one more
/// is answered at once, as if its `wait_ms` were 0 (docs/locks.md "Distributed locks"). Per lock
/// name as the store layer has it, so per lock of each caller where names are caller-scoped.
pub const MAX_WAITING_ACQUISITIONS: usize = 64;

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

crate::store::store_trait! {
    /// What a lock backend must do; every method is one atomic step.
    pub(crate) trait LockStore {
        /// `SET NX PX` with a fresh fencing token, or an extension (same token) when `owner`
        /// already holds it.
        async fn lock_acquire(&self, name: &Name, owner: &Name, ttl_ms: u64)
            -> Result<Attempt, StoreError> = "locks.acquire";
        /// Extends the lease when `owner` and `token` still hold it; `None` when they do not.
        async fn lock_renew(&self, name: &Name, owner: &Name, token: u64, ttl_ms: u64)
            -> Result<Option<Lock>, StoreError> = "locks.renew";
        /// Deletes the lock when `owner` and `token` still hold it (and wakes its waiters);
        /// `false` when they do not.
        async fn lock_release(&self, name: &Name, owner: &Name, token: u64)
            -> Result<bool, StoreError> = "locks.release";
        /// The current holder, if any.
        async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> = "locks.inspect";
        /// A place among the acquisitions waiting on `name` in this process ([`wake::Wakeups::watch`];
        /// none past [`MAX_WAITING_ACQUISITIONS`]), listening for releases: once it returns, every
        /// release of `name` reaches the room.
        async fn lock_watch(&self, name: &Name) -> Watch = _;
    }
}

/// Acquires `name` for `owner`, waiting up to `wait` for another holder to let go: an
/// acquisition that finds it held takes a place in the lock's room in this process and tries
/// again when the room gives it a turn (a release), when it takes the room's alarm (the
/// holder's lease ended), and once more at its own deadline. One arriving when
/// [`MAX_WAITING_ACQUISITIONS`] wait on the lock answers after its first attempt, as if `wait`
/// were zero.
///
/// What holds, with several gateway instances on one Redis (each wakes only its own waiters,
/// from its own releases and from the others' announcements):
/// - a release sends one waiter to try in each instance that has any, not every waiter: it
///   costs as many attempts as instances, whatever the number of waiters; one of them wins,
///   the others keep waiting. A lease's end is one attempt per instance too (the room's
///   alarm), and each waiter makes one more at its own deadline, as its `wait_ms` was charged
///   for. A turn that reaches a waiter while its attempt runs is spent by that attempt when it
///   takes the lock (the release came before it), else brings one more attempt;
/// - a free lock is never left while waiters sleep: after a release every instance with
///   waiters makes an attempt (its turn, kept while no waiter listens), and after a lease's
///   end too (the room's alarm is at the end of the lease its last attempt saw). A woken
///   waiter that fails to take it because another instance's waiter (or anyone) took it first
///   was not needed: the lock is held, and its release or lease end wakes the room again. A
///   woken waiter that goes away or fails before its attempt reports hands the attempt on
///   (see `crate::wait`; a turn it had not yet taken passes to another waiter by itself), and
///   one that took a turn during an attempt that did not win tries again;
/// - releases an instance's subscriber may have missed (it reconnected, or fell behind) make
///   one waiter per lock try once it is listening again ([`wake::Wakeups::missed`]); what
///   pub/sub drops without either sign (a slot migration) waits for the lease's end or the
///   waiters' deadlines, as the lock's own holder would.
pub(crate) async fn acquire<S: LockStore>(
    store: &S,
    name: &Name,
    owner: &Name,
    ttl_ms: u64,
    wait: Duration,
) -> Result<Attempt, StoreError> {
    let first = store.lock_acquire(name, owner, ttl_ms).await?;
    if matches!(first, Attempt::Acquired(_)) || wait.is_zero() {
        return Ok(first);
    }
    // Listening (subscribed) from here on; the attempt below, at once, covers a release made
    // before that.
    let watch = store.lock_watch(name).await;
    let Some(room) = watch.room() else {
        return Ok(first);
    };
    wait_in_room(room, wait, || async {
        let attempt = store.lock_acquire(name, owner, ttl_ms).await?;
        // +1 ms: a lease ending in `ms` is over from the ms after.
        let lease_ms = match &attempt {
            Attempt::Held { retry_after_ms } => *retry_after_ms,
            Attempt::Acquired(_) => ttl_ms,
        };
        Ok(Look {
            next: Some(
                room.clock()
                    .now_us()
                    .saturating_add(ms_in_us(lease_ms.saturating_add(1))),
            ),
            // A turn given during a winning attempt was for a release made before it, so it
            // is spent here rather than sending another waiter to find the lock taken.
            done: matches!(attempt, Attempt::Acquired(_)),
            spends_turn: true,
            answer: attempt,
        })
    })
    .await
}

fn ms_in_us(ms: u64) -> i64 {
    i64::try_from(ms.saturating_mul(1_000)).unwrap_or(i64::MAX)
}
