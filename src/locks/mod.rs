//! Distributed locks with fencing tokens (docs/api.md "Distributed locks"): `SET NX PX`, renewal
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
//! lease runs out, since an expiry sends no message; it never polls in between. A release or
//! a lease's end sends one waiting acquisition per process to try, not all (a lock serves one
//! of them), and at most [`MAX_WAITING_ACQUISITIONS`] wait on one lock in one process.

mod http;
pub mod logic;
mod memory;
mod redis;
pub mod wake;

use std::time::Duration;

use futures::FutureExt;
use tokio::time::Instant;

pub use http::{router, TERMS};
use wake::Room;
pub use wake::Watch;

use crate::store::error::StoreError;
use crate::types::Name;

/// Acquisitions that may wait (`wait_ms`) on one lock in one gateway process at once; one more
/// is answered at once, as if its `wait_ms` were 0 (README "Distributed locks"). Per lock name
/// as the store layer has it, so per lock of each caller where names are caller-scoped.
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
        async fn lock_acquire(
            &self,
            name: &Name,
            owner: &Name,
            ttl_ms: u64,
        ) -> Result<Attempt, StoreError> = "locks.acquire";
        /// Extends the lease when `owner` and `token` still hold it; `None` when they do not.
        async fn lock_renew(
            &self,
            name: &Name,
            owner: &Name,
            token: u64,
            ttl_ms: u64,
        ) -> Result<Option<Lock>, StoreError> = "locks.renew";
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

/// Held while an acquisition tries on its room's behalf (on a turn or the alarm): if that
/// attempt never reports — the client went away, the store failed — the alarm is set to now,
/// so another waiter tries in its place and a free lock is not left to its waiters' deadlines.
struct Standing<'a>(Option<&'a Room>);

impl Drop for Standing<'_> {
    fn drop(&mut self) {
        if let Some(room) = self.0 {
            room.expect(Instant::now());
        }
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
///   (see [`Standing`]; a turn it had not yet taken passes to another waiter by itself), and
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
    let deadline = Instant::now() + wait;
    let first = store.lock_acquire(name, owner, ttl_ms).await?;
    if matches!(first, Attempt::Acquired(_)) || Instant::now() >= deadline {
        return Ok(first);
    }
    // Listening (subscribed) from here on; the attempt below, at once, covers a release made
    // before that.
    let watch = store.lock_watch(name).await;
    let Some(room) = watch.room() else {
        return Ok(first);
    };
    let mut for_room = false;
    loop {
        // Listening before the attempt, so a turn given while it runs (a release it may have
        // come too early for) brings another attempt rather than going to a sleeping waiter
        // or being lost.
        let turn = room.turn.notified();
        tokio::pin!(turn);
        turn.as_mut().enable();
        let mut standing = Standing(for_room.then_some(&**room));
        let started = Instant::now();
        let attempt = store.lock_acquire(name, owner, ttl_ms).await?;
        let now = Instant::now();
        // +1 ms: a lease ending in `ms` is over from the ms after.
        let lease_ms = match &attempt {
            Attempt::Held { retry_after_ms } => *retry_after_ms,
            Attempt::Acquired(_) => ttl_ms,
        };
        room.tried(
            started,
            now + Duration::from_millis(lease_ms.saturating_add(1)),
        );
        standing.0 = None;
        if let Attempt::Acquired(_) = attempt {
            // A turn given during this attempt was for a release made before it (it won), so
            // it is spent here rather than sending another waiter to find the lock taken.
            let _ = turn.as_mut().now_or_never();
            return Ok(attempt);
        }
        if now >= deadline {
            return Ok(attempt);
        }
        for_room = loop {
            let retimed = room.retimed.notified();
            tokio::pin!(retimed);
            let alarm = room.alarm();
            let wake = alarm.map_or(deadline, |alarm| alarm.min(deadline));
            tokio::select! {
                () = turn.as_mut() => break true,
                () = retimed.as_mut() => {}
                () = tokio::time::sleep_until(wake) => {
                    let now = Instant::now();
                    let took_alarm = alarm.is_some_and(|alarm| alarm <= now && room.take(alarm));
                    // A turn given meanwhile is taken too: this waiter is about to try anyway.
                    let took_turn = turn.as_mut().now_or_never().is_some();
                    if took_alarm || took_turn || now >= deadline {
                        break took_alarm || took_turn;
                    }
                }
            }
        };
    }
}
