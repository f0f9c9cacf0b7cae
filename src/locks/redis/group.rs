//! The grouped calls: the acquisitions, renewals and releases that a worker takes up in one
//! turn, each kind sent as one script call per group (or a few, within bounds) and each
//! request answered as if it ran alone.

use fred::prelude::*;
use fred::types::scripts::Script;

use crate::store::redis::route::Written;
use crate::store::redis::RedisStore;
use crate::store::slots::{Kept, Slot};

use super::releases::RELEASES;
use super::wire::{attempt, number, ACQUIRE, RELEASE, RENEW};
use crate::locks::logic::FENCE_GRACE_MS;
use crate::locks::{Attempt, Lock};
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::types::Name;

/// Most acquisitions (renewals, releases) in one script call, and the bytes of their keys and
/// arguments after which a call takes no more: bounds one script run (64 acquisitions: ~130
/// Redis commands, well under a millisecond) however large a turn's group grew. A larger group
/// goes as several calls, one after the other, so requests stay in arrival order.
const MAX_PER_CALL: usize = 64;
const MAX_CALL_BYTES: usize = 16 * 1024;

/// Acquisitions, renewals and releases waiting to go in one call, per group
/// ([`RedisStore::lock_group`]).
pub(super) static GROUPS: Slot<Groups> = Slot::new();

/// The acquisitions (and the renewals, and the releases) a worker takes up in one turn cost one
/// round trip, one script run and, for acquisitions and renewals, one replica wait,
/// each answered as if it ran alone. Grouped by what one script run may touch, not by name:
/// the bench's acquisitions, like most real ones, are of many different names, and so are the
/// renewals of a fleet of workers each holding its own lease.
#[derive(Debug, Default)]
pub(super) struct Groups {
    pub(super) acquisitions: Batches<Acquisition, Attempt>,
    pub(super) renewals: Batches<Renewal, Option<Lock>>,
    pub(super) releases: Batches<Release, bool>,
}

/// The open batches of one kind of request (`T`) answered with `R`s, per group.
pub(super) type Batches<T, R> = GroupCommit<Option<u16>, T, Result<R, StoreError>>;

impl Kept for Groups {}

/// One acquisition's share of a `lock_acquire.lua` call.
pub(super) struct Acquisition {
    pub(super) key: String,
    pub(super) owner: Name,
    pub(super) ttl_ms: u64,
}

/// One renewal's share of a `lock_renew.lua` call.
pub(super) struct Renewal {
    pub(super) key: String,
    pub(super) owner: Name,
    pub(super) token: u64,
    pub(super) ttl_ms: u64,
}

/// One release's share of a `lock_release.lua` call.
pub(super) struct Release {
    pub(super) key: String,
    pub(super) channel: String,
    pub(super) owner: String,
    pub(super) token: u64,
}

impl RedisStore {
    /// `item`'s answer from its group's batch in `commit` (one of [`Groups`]), sent by `send`.
    pub(super) async fn grouped<T, R, F>(
        &self,
        commit: fn(&Groups) -> &Batches<T, R>,
        group: Option<u16>,
        item: T,
        send: fn(RedisStore, Option<u16>, Vec<T>) -> F,
    ) -> Result<R, StoreError>
    where
        T: Send + 'static,
        R: Send + 'static,
        F: std::future::Future<Output = Vec<Result<R, StoreError>>> + Send + 'static,
    {
        commit(self.kept(&GROUPS))
            .join(group, item, self, send)
            .await
            .unwrap_or_else(|| {
                // Only a runtime shutting down drops the sending task before it answers.
                Err(StoreError::Unavailable(
                    "the gateway is shutting down".to_owned(),
                ))
            })
    }

    /// The group a lock whose key is `key` joins: its hash slot on a Cluster (a script's keys
    /// must share one), the one group on a single Redis (a script may touch any key it
    /// declares). fred's slot function, as the gateway's own routing uses.
    pub(super) fn lock_group(&self, key: &str) -> Option<u16> {
        self.cluster
            .then(|| fred::util::redis_keyslot(key.as_bytes()))
    }

    /// One `lock_acquire.lua` call for `call`'s acquisitions, each answered on its own.
    async fn acquire_call(
        &self,
        call: Vec<Acquisition>,
    ) -> Result<Vec<Result<Attempt, StoreError>>, StoreError> {
        let mut keys = Vec::with_capacity(call.len());
        let mut args = Vec::with_capacity(1 + 2 * call.len());
        args.push(FENCE_GRACE_MS.to_string());
        let mut asked = Vec::with_capacity(call.len());
        for a in call {
            keys.push(a.key);
            args.extend([a.owner.to_string(), a.ttl_ms.to_string()]);
            asked.push((a.owner, a.ttl_ms));
        }
        let (now_ms, reply, written) = self
            .clocked(&ACQUIRE, keys, args, asked.len(), "lock_acquire.lua")
            .await?;
        let attempts: Vec<Result<Attempt, StoreError>> = asked
            .into_iter()
            .zip(&reply)
            .map(|((owner, ttl_ms), one)| attempt(owner, ttl_ms, now_ms, one))
            .collect();
        // A fencing token handed out must never be handed out again after a failover
        // (docs/operations.md "Durable writes"); a refusal wrote nothing. One wait covers every
        // acquisition of the call: they ran on one master in one step.
        Ok(written
            .settle(attempts, |a| matches!(a, Attempt::Acquired(_)))
            .await)
    }

    /// One call of `script` (named `what`), whose reply is the store's clock in ms and then one
    /// answer for each of the `n` requests it carried: the clock, those answers, and what
    /// acknowledging its writes takes.
    async fn clocked(
        &self,
        script: &Script,
        keys: Vec<String>,
        args: Vec<String>,
        n: usize,
        what: &str,
    ) -> Result<(i64, Vec<Value>, Written), StoreError> {
        let (mut reply, written): (Vec<Value>, _) =
            self.pool.script_written(script, keys, args).await?;
        if reply.len() != 1 + n {
            return Err(StoreError::Internal(format!(
                "{what} answered {} of {n} requests",
                reply.len().saturating_sub(1),
            )));
        }
        let now_ms: i64 = number(reply.first())?;
        reply.remove(0);
        Ok((now_ms, reply, written))
    }

    /// One `lock_renew.lua` call for `call`'s renewals, each answered on its own.
    async fn renew_call(
        &self,
        call: Vec<Renewal>,
    ) -> Result<Vec<Result<Option<Lock>, StoreError>>, StoreError> {
        let mut keys = Vec::with_capacity(call.len());
        let mut args = Vec::with_capacity(1 + 3 * call.len());
        args.push(FENCE_GRACE_MS.to_string());
        let mut asked = Vec::with_capacity(call.len());
        for r in call {
            keys.push(r.key);
            args.extend([
                r.owner.to_string(),
                r.token.to_string(),
                r.ttl_ms.to_string(),
            ]);
            asked.push((r.owner, r.token, r.ttl_ms));
        }
        let (now_ms, reply, written) = self
            .clocked(&RENEW, keys, args, asked.len(), "lock_renew.lua")
            .await?;
        let renewed: Vec<Result<Option<Lock>, StoreError>> = asked
            .into_iter()
            .zip(&reply)
            .map(|((owner, token, ttl_ms), one)| {
                Ok((number::<u8>(Some(one))? == 1).then(|| Lock {
                    owner,
                    token,
                    expires_at_ms: now_ms.saturating_add_unsigned(ttl_ms),
                }))
            })
            .collect();
        // A renewed lease must outlive a failover as its acquisition did (docs/operations.md
        // "Durable writes"); a refusal wrote nothing. One wait covers the call.
        Ok(written.settle(renewed, Option::is_some).await)
    }

    /// One `lock_release.lua` call for `call`'s releases, each answered on its own.
    async fn release_call(&self, call: Vec<Release>) -> Result<Vec<bool>, StoreError> {
        let n = call.len();
        let mut keys = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(1 + 3 * n);
        args.push(self.kept(&RELEASES).origin.clone());
        for r in call {
            keys.push(r.key);
            args.extend([r.owner, r.token.to_string(), r.channel]);
        }
        let reply: Vec<i64> = self.pool.script(&RELEASE, keys, args).await?;
        if reply.len() != n {
            return Err(StoreError::Internal(format!(
                "lock_release.lua answered {} of {n} releases",
                reply.len()
            )));
        }
        Ok(reply.into_iter().map(|r| r == 1).collect())
    }
}

/// A group of acquisitions in `lock_acquire.lua` calls of at most [`MAX_PER_CALL`] and
/// [`MAX_CALL_BYTES`], in order.
pub(super) async fn acquire_group(
    store: RedisStore,
    _: Option<u16>,
    acquisitions: Vec<Acquisition>,
) -> Vec<Result<Attempt, StoreError>> {
    let weight = |a: &Acquisition| a.key.len() + a.owner.as_str().len() + 24;
    group::in_calls(acquisitions, MAX_PER_CALL, MAX_CALL_BYTES, weight, |call| {
        store.acquire_call(call)
    })
    .await
}

/// A group of renewals in `lock_renew.lua` calls of at most [`MAX_PER_CALL`] and
/// [`MAX_CALL_BYTES`], in order.
pub(super) async fn renew_group(
    store: RedisStore,
    _: Option<u16>,
    renewals: Vec<Renewal>,
) -> Vec<Result<Option<Lock>, StoreError>> {
    let weight = |r: &Renewal| r.key.len() + r.owner.as_str().len() + 48;
    group::in_calls(renewals, MAX_PER_CALL, MAX_CALL_BYTES, weight, |call| {
        store.renew_call(call)
    })
    .await
}

/// A group of releases in `lock_release.lua` calls of at most [`MAX_PER_CALL`] and
/// [`MAX_CALL_BYTES`], in order.
pub(super) async fn release_group(
    store: RedisStore,
    _: Option<u16>,
    releases: Vec<Release>,
) -> Vec<Result<bool, StoreError>> {
    let weight = |r: &Release| r.key.len() + r.channel.len() + r.owner.len() + 24;
    group::in_calls(
        releases,
        MAX_PER_CALL,
        MAX_CALL_BYTES,
        weight,
        |call| async {
            let done = store.release_call(call).await?;
            Ok(done.into_iter().map(Ok).collect())
        },
    )
    .await
}
