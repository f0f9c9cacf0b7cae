//! Locks on Redis: one script per step (`lock_*.lua`), one key per name (`lk:{name}`: the
//! lease's deadline, the token, which is also the name's fencing counter, and the owner;
//! docs/locks.md "Key layout"), so an acquisition is one `GET` and one `SET` (issue 42).
//! Acquisitions and releases that a worker takes up in one turn go as one script run per slot
//! on a Cluster (one on a single Redis), each answered as if it ran alone ([`Groups`]). A
//! release is announced with `SPUBLISH` on the lock's own sharded channel
//! (`lk:{name}:released`, same slot), so on a Cluster only that shard's nodes carry it; the
//! message is the releasing process's origin. Each gateway process has one subscriber
//! connection (made on its first waiting acquisition) that holds `SSUBSCRIBE`s for exactly the
//! names its waiters wait on, and sends one waiter of the lock to try
//! ([`Wakeups::released`]); a process's own releases tell its waiters directly and their
//! announcements, heard back, are skipped, so one release is one attempt per process. After a
//! reconnect (or when the subscriber fell behind) one waiter per lock tries at once
//! ([`Wakeups::missed`]); a message lost to a slot migration only delays the waiters until the
//! lease ends.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock, Weak};
use std::time::Duration;

use fred::prelude::*;
use fred::types::scripts::Script;
use tokio::sync::{mpsc, oneshot};

use crate::store::keys::Keys;
use crate::store::redis::route::Written;
use crate::store::redis::{text, RedisStore};
use crate::store::slots::{Kept, Slot};

use crate::locks::logic::FENCE_GRACE_MS;
use crate::locks::wake::Wakeups;
use crate::locks::{Attempt, Lock, LockStore, Watch};
use crate::store::error::StoreError;
use crate::store::group::{self, GroupCommit};
use crate::types::Name;

static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_acquire.lua")));
static RENEW: LazyLock<Script> = LazyLock::new(|| Script::from_lua(include_str!("lock_renew.lua")));
static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_release.lua")));
static INSPECT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("lock_inspect.lua")));

/// This process's release subscriber and the waiters it wakes.
#[derive(Debug)]
struct Releases {
    wakeups: Arc<Wakeups>,
    /// The subscriber's mailbox; `None` when it could not be built.
    subscriber: OnceLock<Option<mpsc::UnboundedSender<Cmd>>>,
    /// Names this process in its release announcements, so that its own, heard back, are not
    /// counted twice (its releases tell its waiters directly).
    origin: String,
}

impl Default for Releases {
    fn default() -> Self {
        Self {
            wakeups: Arc::default(),
            subscriber: OnceLock::new(),
            origin: format!("{:016x}", rand::random::<u64>()),
        }
    }
}

/// What waiters ask of the subscriber, in order, so a name's subscribe and unsubscribe never
/// overtake each other.
#[derive(Debug)]
enum Cmd {
    /// One more waiter on this channel, of this lock (subscribe on the first); answered once
    /// subscribed.
    Listen(String, String, oneshot::Sender<()>),
    /// One waiter fewer (unsubscribe after the last).
    Forget(String),
}

impl Kept for Releases {}

static RELEASES: Slot<Releases> = Slot::new();

impl Releases {
    /// Starts the subscriber, connecting as `connect` says.
    fn start(&self, connect: &(Config, Duration)) -> Option<mpsc::UnboundedSender<Cmd>> {
        let (config, timeout) = connect.clone();
        let client = Builder::from_config(config)
            .with_performance_config(|perf| perf.default_command_timeout = timeout)
            .with_connection_config(|conn| {
                conn.connection_timeout = timeout;
                conn.internal_command_timeout = timeout;
            })
            .set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2))
            .build()
            .inspect_err(|e| tracing::warn!(error = %e, "no lock release subscriber"))
            .ok()?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(subscriber(
            client,
            rx,
            Arc::downgrade(&self.wakeups),
            self.origin.clone(),
        ));
        Some(tx)
    }
}

/// Holds one `SSUBSCRIBE` per channel some waiter of this process listens on and sends one
/// waiter of each announced lock to try (not for this process's own announcements, `origin`:
/// those releases told their waiters already), until the store and every waiter are gone.
async fn subscriber(
    client: Client,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    wakeups: Weak<Wakeups>,
    origin: String,
) {
    let mut messages = client.message_rx();
    let mut reconnects = client.reconnect_rx();
    client.connect();
    let _ = client.wait_for_connect().await;
    // channel → (lock name, waiters)
    let mut listening: HashMap<String, (String, usize)> = HashMap::new();
    loop {
        tokio::select! {
            cmd = cmds.recv() => match cmd {
                Some(Cmd::Listen(channel, name, done)) => {
                    let entry = listening.entry(channel.clone()).or_insert((name, 0));
                    entry.1 += 1;
                    if entry.1 == 1 {
                        if let Err(e) = client.ssubscribe(channel.as_str()).await {
                            tracing::warn!(error = %e, "lock release subscription failed");
                        }
                    }
                    let _ = done.send(());
                }
                Some(Cmd::Forget(channel)) => {
                    if let Some(entry) = listening.get_mut(&channel) {
                        entry.1 -= 1;
                        if entry.1 == 0 {
                            listening.remove(&channel);
                            let _ = client.sunsubscribe(channel.as_str()).await;
                        }
                    }
                }
                None => break,
            },
            message = messages.recv() => {
                let Some(wakeups) = wakeups.upgrade() else { break };
                match message {
                    Ok(m) => {
                        let own = m.value.as_str().is_some_and(|from| from == origin.as_str());
                        if let Some((name, _)) = listening.get(&*m.channel).filter(|_| !own) {
                            wakeups.released(name);
                        }
                    }
                    // Missed messages: one waiter per lock tries again.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => wakeups.missed(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
            // A new connection has no subscriptions, and messages may have been missed.
            Ok(_) = reconnects.recv() => {
                for channel in listening.keys() {
                    if let Err(e) = client.ssubscribe(channel.as_str()).await {
                        tracing::warn!(error = %e, "lock release subscription failed");
                    }
                }
                if let Some(wakeups) = wakeups.upgrade() {
                    wakeups.missed();
                }
            }
        }
    }
    let _ = client.quit().await;
}

fn number<T: std::str::FromStr>(v: Option<&Value>) -> Result<T, StoreError> {
    text(v)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| StoreError::Internal(format!("a lock script returned {v:?}")))
}

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
        let watch = releases.wakeups.watch(name.as_str());
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

/// Most acquisitions (renewals, releases) in one script call, and the bytes of their keys and
/// arguments after which a call takes no more: bounds one script run (64 acquisitions: ~130
/// Redis commands, well under a millisecond) however large a turn's group grew. A larger group
/// goes as several calls, one after the other, so requests stay in arrival order.
const MAX_PER_CALL: usize = 64;
const MAX_CALL_BYTES: usize = 16 * 1024;

/// Acquisitions, renewals and releases waiting to go in one call, per group
/// ([`RedisStore::lock_group`]).
static GROUPS: Slot<Groups> = Slot::new();

/// The acquisitions (and the renewals, and the releases) a worker takes up in one turn cost one
/// round trip, one script run and, for acquisitions and renewals, one replica wait (issue 42),
/// each answered as if it ran alone. Grouped by what one script run may touch, not by name:
/// the bench's acquisitions, like most real ones, are of many different names, and so are the
/// renewals of a fleet of workers each holding its own lease.
#[derive(Debug, Default)]
struct Groups {
    acquisitions: Batches<Acquisition, Attempt>,
    renewals: Batches<Renewal, Option<Lock>>,
    releases: Batches<Release, bool>,
}

/// The open batches of one kind of request (`T`) answered with `R`s, per group.
type Batches<T, R> = GroupCommit<Option<u16>, T, Result<R, StoreError>>;

impl Kept for Groups {}

/// One acquisition's share of a `lock_acquire.lua` call.
struct Acquisition {
    key: String,
    owner: Name,
    ttl_ms: u64,
}

/// One renewal's share of a `lock_renew.lua` call.
struct Renewal {
    key: String,
    owner: Name,
    token: u64,
    ttl_ms: u64,
}

/// One release's share of a `lock_release.lua` call.
struct Release {
    key: String,
    channel: String,
    owner: String,
    token: u64,
}

impl RedisStore {
    /// `item`'s answer from its group's batch in `commit` (one of [`Groups`]), sent by `send`.
    async fn grouped<T, R, F>(
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
    fn lock_group(&self, key: &str) -> Option<u16> {
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
async fn acquire_group(
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
async fn renew_group(
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
async fn release_group(
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

/// One acquisition's reply within `lock_acquire.lua`'s, whose clock read `now_ms`: the ms
/// left of another owner's lease (an integer), or the token (a string) of a lease of `ttl_ms`
/// from then.
fn attempt(owner: Name, ttl_ms: u64, now_ms: i64, reply: &Value) -> Result<Attempt, StoreError> {
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
    /// [`FENCE_GRACE_MS`] as the name's fencing counter (`lock_acquire.lua`).
    pub(crate) fn lock(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}", self.prefix)
    }

    /// The sharded pub/sub channel a lock's releases are announced on, under the lock's hash
    /// tag so `SPUBLISH` from the release script stays in its slot (a channel, not a key).
    pub(crate) fn lock_released_channel(&self, name: &Name) -> String {
        format!("{}lk:{{{name}}}:released", self.prefix)
    }
}
