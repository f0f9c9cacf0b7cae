//! Locks on Redis: one script per step (`lock_*.lua`), one key per name (`lk:{name}`: the
//! lease's deadline, the token, which is also the name's fencing counter, and the owner;
//! docs/locks.md "Key layout"), so an acquisition is one `GET` and one `SET`.
//! Acquisitions and releases that a worker takes up in one turn go as one script run per slot
//! on a Cluster (one on a single Redis), each answered as if it ran alone ([`group::Groups`]). A
//! release is announced with `SPUBLISH` on the lock's own sharded channel
//! (`lk:{name}:released`, same slot), so on a Cluster only that shard's nodes carry it; the
//! message is the releasing process's origin. Each gateway process has one subscriber
//! connection (made on its first waiting acquisition) that holds `SSUBSCRIBE`s for exactly the
//! names its waiters wait on, and sends one waiter of the lock to try
//! ([`Wakeups::released`](crate::locks::wake::Wakeups::released)); a process's own releases tell its waiters directly and their
//! announcements, heard back, are skipped, so one release is one attempt per process. After a
//! reconnect (or when the subscriber fell behind) one waiter per lock tries at once
//! ([`Wakeups::missed`](crate::locks::wake::Wakeups::missed)); a message lost to a slot migration only delays the waiters until the
//! lease ends.
//!
//! Here: the store trait. [`group`]: the grouped acquisitions, renewals and releases;
//! [`releases`]: the release subscriber and the waiters it wakes; [`wire`]: the scripts, the
//! keys and the decoding of replies, which the others share.

mod group;
mod releases;
mod wire;

use fred::prelude::*;
use tokio::sync::oneshot;

use crate::store::redis::{text, RedisStore};

use crate::locks::{Attempt, Lock, LockStore, Watch};
use crate::store::error::StoreError;
use crate::types::Name;
use group::{acquire_group, release_group, renew_group, Acquisition, Release, Renewal};
use releases::{Cmd, RELEASES};
use wire::{number, INSPECT};

impl LockStore for RedisStore {
    async fn lock_acquire(
        &self,
        name: &Name,
        owner: &Name,
        ttl_ms: u64,
    ) -> Result<Attempt, StoreError> {
        let acquisition = Acquisition {
            key: self.keys.lock(name),
            owner: owner.clone(),
            ttl_ms,
        };
        let group = self.lock_group(&acquisition.key);
        self.grouped(|g| &g.acquisitions, group, acquisition, acquire_group)
            .await
    }

    async fn lock_renew(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
        ttl_ms: u64,
    ) -> Result<Option<Lock>, StoreError> {
        let renewal = Renewal {
            key: self.keys.lock(name),
            owner: owner.clone(),
            token,
            ttl_ms,
        };
        let group = self.lock_group(&renewal.key);
        self.grouped(|g| &g.renewals, group, renewal, renew_group)
            .await
    }

    async fn lock_release(
        &self,
        name: &Name,
        owner: &Name,
        token: u64,
    ) -> Result<bool, StoreError> {
        let release = Release {
            key: self.keys.lock(name),
            channel: self.keys.lock_released_channel(name),
            owner: owner.to_string(),
            token,
        };
        let group = self.lock_group(&release.key);
        let released = self
            .grouped(|g| &g.releases, group, release, release_group)
            .await?;
        // Told here rather than by the announcement coming back (the subscriber skips this
        // process's own), so this process's waiters hear it while the subscriber reconnects
        // too, and only once.
        if released {
            self.kept(&RELEASES).wakeups.released(name.as_str());
        }
        Ok(released)
    }

    async fn lock_inspect(&self, name: &Name) -> Result<Option<Lock>, StoreError> {
        let reply: Vec<Value> = self
            .pool
            .script(&INSPECT, vec![self.keys.lock(name)], Vec::<String>::new())
            .await?;
        if reply.is_empty() {
            return Ok(None);
        }
        let owner = text(reply.get(1)).and_then(|o| Name::try_from(o).ok());
        Ok(Some(Lock {
            expires_at_ms: number(reply.first())?,
            owner: owner.ok_or_else(|| {
                StoreError::Internal(format!("lock_inspect.lua returned {reply:?}"))
            })?,
            token: number(reply.get(2))?,
        }))
    }

    async fn lock_watch(&self, name: &Name) -> Watch {
        let releases = self.kept(&RELEASES);
        let watch = releases.wakeups.watch(name.as_str(), self.timers());
        // No place (the room is full): nothing to listen for.
        if watch.room().is_none() {
            return watch;
        }
        // Without a subscriber the waiter still hears this process's releases and tries at
        // the lease's end.
        let Some(subscriber) = releases
            .subscriber
            .get_or_init(|| releases.start(self.subscriber()))
        else {
            return watch;
        };
        let channel = self.keys.lock_released_channel(name);
        let (done, subscribed) = oneshot::channel();
        if subscriber
            .send(Cmd::Listen(channel.clone(), name.to_string(), done))
            .is_err()
        {
            return watch;
        }
        let forget = subscriber.clone();
        let watch = watch.on_drop(move || {
            let _ = forget.send(Cmd::Forget(channel));
        });
        // Until subscribed a release would go unheard; wait for it (briefly: the lease's end
        // still bounds the waiter without it).
        let timeout = self.subscriber().1;
        let _ = tokio::time::timeout(timeout, subscribed).await;
        watch
    }
}
