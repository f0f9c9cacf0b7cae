//! Feeds: one per watched resource per process, however many clients watch it. A feed listens
//! to its resource's store channel (one subscription), keeps its state, and hands it to every
//! client through a `watch` channel, so a client that does not keep up gets the latest state,
//! never a backlog, and holds no other. A domain says what its resource is ([`Source`]): how to
//! listen and read, what a message says, how often a change may go out, which changes go out at
//! once, and when the state changes by time alone. The feed ends with its last client.
//! A client watches its thread's relay of the feed, not the feed itself ([`super::relay`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::body::Bytes;
use futures::future::BoxFuture;
use futures::stream::{self, Stream};
use tokio::sync::watch;

use super::relay::Relays;
use super::{Ended, Frames};
use crate::clock::Clock;
use crate::store::channels::{Heard, Listening};
use crate::store::StoreError;

/// Longest a feed goes without reading its resource: pub/sub delivers at most once (a message
/// lost while the subscriber reconnects, a shard channel dropped when a Cluster moves its slot),
/// so a feed looks again now and then, once per feed whatever the number of clients.
pub const RECHECK: Duration = Duration::from_secs(5);

/// What a domain's live resource is to its feed.
pub trait Source: Send + Sync + 'static {
    type Key: Eq + Hash + Clone + Send + Sync + std::fmt::Debug + 'static;
    type State: Clone + PartialEq + Send + Sync + std::fmt::Debug + 'static;

    /// What the feeds watch, as the `kind` label of `gateway_event_feeds`.
    const KIND: &'static str;

    /// At most one state per this long goes out (the last always does).
    const EVERY: Duration;

    /// Subscribes to `key`'s changes.
    fn listen<'a>(&'a self, key: &'a Self::Key) -> BoxFuture<'a, Result<Listening, StoreError>>;

    /// `key`'s state now; `None` for an unknown resource.
    fn read<'a>(
        &'a self,
        key: &'a Self::Key,
    ) -> BoxFuture<'a, Result<Option<Self::State>, StoreError>>;

    /// The state a message carries (at `now_ms`), or `None` when it only says "changed" and the
    /// state is read again.
    fn heard(&self, _message: &str, _now_ms: i64) -> Option<Self::State> {
        None
    }

    /// A change that goes out at once, whatever [`Self::EVERY`] says.
    fn urgent(&self, _before: &Self::State, _after: &Self::State) -> bool {
        false
    }

    /// When (ms) the state next changes by time alone (a sale's begin, a job falling due): it
    /// is read again then.
    fn due(&self, _state: &Self::State, _now_ms: i64) -> Option<i64> {
        None
    }

    /// The events a client is sent for `now`, after `before` (`None`: the stream's first),
    /// added to `out`.
    fn events(
        &self,
        key: &Self::Key,
        before: Option<&Self::State>,
        now: &Self::State,
        out: &mut Frames<'_>,
    );
}

/// `events` framed, under the `id:` of `epoch` and `seq`.
fn framed<S: Source>(
    source: &S,
    key: &S::Key,
    before: Option<&S::State>,
    now: &S::State,
    (epoch, seq): (i64, u64),
) -> Bytes {
    let id = format!("{epoch}-{seq}");
    let mut out = Frames::new(&id);
    source.events(key, before, now, &mut out);
    out.bytes()
}

/// What a feed hands its clients.
#[derive(Debug, Clone)]
struct Snapshot<T> {
    /// When the feed started (ms) and its count of states sent: the events' `id`.
    epoch: i64,
    seq: u64,
    state: T,
    /// The events from the state before this one to this one, framed once for every client
    /// that saw the state before (the others, behind, frame their own).
    change: Bytes,
    /// The store was lost: the streams end.
    lost: bool,
}

/// What a feed hands its clients, by the resource it watches.
type Senders<S> = HashMap<<S as Source>::Key, watch::Sender<Snapshot<<S as Source>::State>>>;

/// The feeds of one kind of resource running in this process.
pub struct Feeds<S: Source> {
    source: Arc<S>,
    clock: Clock,
    open: Mutex<Senders<S>>,
    relays: Arc<Relays<S::Key, Snapshot<S::State>>>,
}

impl<S: Source> std::fmt::Debug for Feeds<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeds")
            .field("open", &lock(&self.open).len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a client's stream is made of: its first events, then the rest as they come.
pub type Opened = (
    Bytes,
    std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, Ended>> + Send>>,
);

/// Where one client's stream is in its feed.
struct Follow<S: Source> {
    rx: watch::Receiver<Snapshot<S::State>>,
    /// The last state sent to the client, and its number.
    seen: u64,
    last: S::State,
    source: Arc<S>,
    key: S::Key,
}

impl<S: Source> Feeds<S> {
    pub fn new(source: S, clock: Clock) -> Self {
        Self {
            source: Arc::new(source),
            clock,
            open: Mutex::default(),
            relays: Arc::default(),
        }
    }

    /// A client's stream of `key`: the current state's events first, then each change's;
    /// `None` for an unknown resource.
    pub async fn open(self: &Arc<Self>, key: &S::Key) -> Result<Option<Opened>, StoreError> {
        let Some(up) = self.watch(key).await? else {
            return Ok(None);
        };
        let rx = self.relays.view(key, up);
        let first = rx.borrow().clone();
        let opening = framed(
            &*self.source,
            key,
            None,
            &first.state,
            (first.epoch, first.seq),
        );
        let follow = Follow {
            rx,
            seen: first.seq,
            last: first.state,
            source: self.source.clone(),
            key: key.clone(),
        };
        let rest = stream::unfold(follow, |mut f| async move {
            f.rx.changed().await.ok()?;
            let now = f.rx.borrow_and_update().clone();
            if now.lost {
                return Some((Err(Ended::StoreLost), f));
            }
            let events = if now.seq == f.seen + 1 {
                now.change
            } else {
                framed(
                    &*f.source,
                    &f.key,
                    Some(&f.last),
                    &now.state,
                    (now.epoch, now.seq),
                )
            };
            f.seen = now.seq;
            f.last = now.state;
            Some((Ok(events), f))
        });
        Ok(Some((opening, Box::pin(rest))))
    }

    async fn watch(
        self: &Arc<Self>,
        key: &S::Key,
    ) -> Result<Option<watch::Receiver<Snapshot<S::State>>>, StoreError> {
        if let Some(tx) = lock(&self.open).get(key) {
            return Ok(Some(tx.subscribe()));
        }
        // Listening before the read: a change after it is heard, one before it is read.
        let listening = self.source.listen(key).await?;
        let Some(state) = self.source.read(key).await? else {
            return Ok(None);
        };
        let mut open = lock(&self.open);
        // Another client started it meanwhile.
        if let Some(tx) = open.get(key) {
            return Ok(Some(tx.subscribe()));
        }
        let now = self.clock.now_ms();
        let (tx, rx) = watch::channel(Snapshot {
            epoch: now,
            seq: 0,
            state: state.clone(),
            change: Bytes::new(),
            lost: false,
        });
        open.insert(key.clone(), tx.clone());
        self.count(open.len());
        let due_at = self.source.due(&state, now);
        let feed = Feed {
            feeds: Arc::downgrade(self),
            source: self.source.clone(),
            clock: self.clock.clone(),
            key: key.clone(),
            tx,
            current: state,
            sent_ms: now,
            pending: false,
            stale: false,
            read_ms: now,
            due_at,
        };
        tokio::spawn(feed.run(listening));
        Ok(Some(rx))
    }

    /// Drops `key`'s feed if it is `tx`: only when nobody watches it, unless `anyway`. Whether
    /// it did.
    fn close(&self, key: &S::Key, tx: &watch::Sender<Snapshot<S::State>>, anyway: bool) -> bool {
        let mut open = lock(&self.open);
        if !anyway && tx.receiver_count() > 0 {
            return false;
        }
        if open.get(key).is_some_and(|t| t.same_channel(tx)) {
            open.remove(key);
            self.count(open.len());
        }
        true
    }

    /// `gateway_event_feeds`: feeds running, one store subscription each. Resolved at each
    /// change (a feed's start or end, not an event), so a recorder installed after the feeds
    /// were made still gets it.
    fn count(&self, running: usize) {
        metrics::gauge!("gateway_event_feeds", "kind" => S::KIND).set(running as f64);
    }

    /// Feeds running now.
    pub fn running(&self) -> usize {
        lock(&self.open).len()
    }
}

/// One resource's feed task.
struct Feed<S: Source> {
    feeds: Weak<Feeds<S>>,
    source: Arc<S>,
    clock: Clock,
    key: S::Key,
    tx: watch::Sender<Snapshot<S::State>>,
    /// The state as last heard or read.
    current: S::State,
    /// When a state was last sent (ms on the clock).
    sent_ms: i64,
    /// `current` may differ from what was sent.
    pending: bool,
    /// A message said the state changed without saying how: it is to be read.
    stale: bool,
    /// When the state was last read (ms on the clock).
    read_ms: i64,
    /// When the state changes by time alone ([`Source::due`] when it was set).
    due_at: Option<i64>,
}

/// What woke a feed.
enum Woke {
    Heard(Heard),
    Flush,
    Due,
    Unwatched,
}

impl<S: Source> Feed<S> {
    async fn run(mut self, mut listening: Listening) {
        let every = S::EVERY.as_millis() as i64;
        loop {
            let flush =
                (self.pending || self.stale).then(|| self.sent_ms.max(self.read_ms) + every);
            let due = self.due_at;
            let recheck = self.read_ms + RECHECK.as_millis() as i64;
            let woke = tokio::select! {
                heard = listening.next() => Woke::Heard(heard),
                () = at(&self.clock, flush) => Woke::Flush,
                () = at(&self.clock, due) => Woke::Due,
                () = at(&self.clock, Some(recheck)) => Woke::Due,
                () = self.tx.closed() => Woke::Unwatched,
            };
            // A message that only says "changed" is read at most once per `EVERY`; a missed
            // one, or a change by time alone, at once.
            let mut now_please = false;
            match woke {
                Woke::Heard(Heard::Message(m)) => {
                    match self.source.heard(&m, self.clock.now_ms()) {
                        Some(state) => self.set(state),
                        None => self.stale = true,
                    }
                }
                Woke::Heard(Heard::Missed) | Woke::Due => {
                    self.stale = true;
                    now_please = true;
                }
                Woke::Heard(Heard::Lost) => return self.lost(),
                Woke::Flush => {}
                Woke::Unwatched => {
                    let gone = self.feeds.upgrade();
                    if gone.is_none_or(|f| f.close(&self.key, &self.tx, false)) {
                        return;
                    }
                }
            }
            let now = self.clock.now_ms();
            if self.stale && (now_please || now - self.read_ms >= every) {
                self.stale = false;
                self.read_ms = now;
                match self.source.read(&self.key).await {
                    Ok(Some(state)) => self.set(state),
                    // Gone: nothing more will change until it is made again.
                    Ok(None) => {}
                    Err(_) => return self.lost(),
                }
            }
            self.send();
        }
    }

    fn set(&mut self, state: S::State) {
        // From the state's own time: a moment that passed before the feed came to wait on it
        // (the clock moved between the read and the wait) wakes it at once.
        self.due_at = self.source.due(&state, self.clock.now_ms());
        self.current = state;
        self.pending = true;
    }

    /// Sends the current state if it changed: an urgent change at once, another once
    /// [`Source::EVERY`] has passed since the last send.
    fn send(&mut self) {
        if !self.pending {
            return;
        }
        let now = self.clock.now_ms();
        let last = self.tx.borrow().state.clone();
        if self.current == last {
            self.pending = false;
            return;
        }
        let early = now - self.sent_ms < S::EVERY.as_millis() as i64;
        if early && !self.source.urgent(&last, &self.current) {
            return;
        }
        let state = self.current.clone();
        let (epoch, seq) = {
            let s = self.tx.borrow();
            (s.epoch, s.seq + 1)
        };
        let change = framed(&*self.source, &self.key, Some(&last), &state, (epoch, seq));
        self.tx.send_modify(|s| {
            s.seq = seq;
            s.state = state;
            s.change = change;
        });
        self.sent_ms = now;
        self.pending = false;
    }

    /// The store is lost: the feed's clients are told and it ends.
    fn lost(self) {
        if let Some(feeds) = self.feeds.upgrade() {
            feeds.close(&self.key, &self.tx, true);
        }
        self.tx.send_modify(|s| {
            s.seq += 1;
            s.lost = true;
        });
    }
}

/// Sleeps until `at` (ms on `clock`), or for ever without one.
async fn at(clock: &Clock, at: Option<i64>) {
    match at {
        Some(ms) => clock.sleep_until(ms.saturating_mul(1_000)).await,
        None => std::future::pending().await,
    }
}
