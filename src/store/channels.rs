//! Store channels, fanned out in-process (docs/api.md "Events"): whatever the number of
//! listeners in this process, one subscription per channel. The memory backend publishes into
//! [`Channels`] directly; the Redis backend subscribes once per channel (`redis/listen.rs`) and
//! hands each message here. A channel is dropped, and unsubscribed, when its last listener goes.
//!
//! Written here rather than with a pub/sub crate: the fan-out is a `HashMap` of Tokio broadcast
//! senders, and what it adds is the store's own signals (subscribed again, store lost) in the
//! same stream as the messages.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{broadcast, mpsc};

/// What a listener hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A message published on the channel.
    Message(Arc<str>),
    /// The subscription was made or made again, or this listener fell behind: messages may have
    /// been missed, so the state is to be read afresh.
    Missed,
    /// The store was lost: the listener ends (its clients reconnect).
    Lost,
}

/// Messages a listener may fall behind by before it is told it missed some ([`Heard::Missed`]).
const BUFFER: usize = 64;

/// What a backend that subscribes in its store is told as channels open and close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Opened(Arc<str>),
    Closed(Arc<str>),
}

/// The open channels of one store.
#[derive(Debug, Default)]
pub struct Channels {
    open: Mutex<HashMap<Arc<str>, Weak<Channel>>>,
    /// How many channels are open: a write with nobody listening anywhere in the process
    /// skips naming its channel (the memory backend's writes would format one each).
    count: AtomicUsize,
    /// The backend's subscriber, told of each channel opened and closed (none in memory).
    changes: Option<mpsc::UnboundedSender<Change>>,
}

#[derive(Debug)]
struct Channel {
    name: Arc<str>,
    tx: broadcast::Sender<Heard>,
    channels: Weak<Channels>,
}

impl Drop for Channel {
    fn drop(&mut self) {
        let Some(channels) = self.channels.upgrade() else {
            return;
        };
        let mut open = lock(&channels.open);
        // Only if no listener opened it again since the last one went.
        if open.get(&self.name).is_some_and(|w| w.strong_count() == 0) {
            open.remove(&self.name);
            channels.count.fetch_sub(1, Ordering::Relaxed);
            if let Some(changes) = &channels.changes {
                let _ = changes.send(Change::Closed(self.name.clone()));
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One listener of a channel; the channel stays open while one is held.
#[derive(Debug)]
pub struct Listening {
    rx: broadcast::Receiver<Heard>,
    _channel: Arc<Channel>,
}

impl Listening {
    /// The next thing heard; a listener that fell behind hears [`Heard::Missed`] once.
    pub async fn next(&mut self) -> Heard {
        match self.rx.recv().await {
            Ok(heard) => heard,
            Err(broadcast::error::RecvError::Lagged(_)) => Heard::Missed,
            Err(broadcast::error::RecvError::Closed) => Heard::Lost,
        }
    }
}

impl Channels {
    /// Channels whose opening and closing `changes` is told of (a backend's subscriber).
    pub fn subscribed(changes: mpsc::UnboundedSender<Change>) -> Self {
        Self {
            open: Mutex::default(),
            count: AtomicUsize::new(0),
            changes: Some(changes),
        }
    }

    /// Listens to `name`, opening it for the first listener.
    pub fn listen(self: &Arc<Self>, name: &str) -> Listening {
        let mut open = lock(&self.open);
        if let Some(channel) = open.get(name).and_then(Weak::upgrade) {
            return Listening {
                rx: channel.tx.subscribe(),
                _channel: channel,
            };
        }
        let name: Arc<str> = name.into();
        let (tx, rx) = broadcast::channel(BUFFER);
        let channel = Arc::new(Channel {
            name: name.clone(),
            tx,
            channels: Arc::downgrade(self),
        });
        if open
            .insert(name.clone(), Arc::downgrade(&channel))
            .is_none()
        {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(changes) = &self.changes {
            let _ = changes.send(Change::Opened(name));
        }
        Listening {
            rx,
            _channel: channel,
        }
    }

    /// Tells `name`'s listeners, if it has any.
    pub fn tell(&self, name: &str, heard: Heard) {
        let channel = lock(&self.open).get(name).and_then(Weak::upgrade);
        if let Some(channel) = channel {
            let _ = channel.tx.send(heard);
        }
    }

    /// Tells every open channel's listeners (a subscription made again, the store lost).
    pub fn tell_all(&self, heard: &Heard) {
        let channels: Vec<Arc<Channel>> = lock(&self.open)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for channel in channels {
            let _ = channel.tx.send(heard.clone());
        }
    }

    /// Whether any channel has listeners in this process (a cheap check before naming one).
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Whether `name` has listeners in this process.
    pub fn is_open(&self, name: &str) -> bool {
        lock(&self.open)
            .get(name)
            .is_some_and(|w| w.strong_count() > 0)
    }

    /// The channels open now.
    pub fn names(&self) -> Vec<Arc<str>> {
        lock(&self.open)
            .iter()
            .filter(|(_, w)| w.strong_count() > 0)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_listener_hears_a_message_once_and_the_last_one_closes_the_channel() {
        let (tx, mut changes) = mpsc::unbounded_channel();
        let channels = Arc::new(Channels::subscribed(tx));
        let mut a = channels.listen("c");
        let mut b = channels.listen("c");
        assert_eq!(changes.try_recv(), Ok(Change::Opened("c".into())));
        assert!(
            changes.try_recv().is_err(),
            "one subscription for two listeners"
        );
        channels.tell("c", Heard::Message("m".into()));
        channels.tell("other", Heard::Message("x".into()));
        assert_eq!(a.next().await, Heard::Message("m".into()));
        assert_eq!(b.next().await, Heard::Message("m".into()));
        drop(a);
        assert!(channels.is_open("c"));
        drop(b);
        assert!(!channels.is_open("c"));
        assert_eq!(changes.try_recv(), Ok(Change::Closed("c".into())));
        assert!(!channels.any());
    }

    #[tokio::test]
    async fn a_listener_that_falls_behind_hears_that_it_missed_messages() {
        let channels = Arc::new(Channels::default());
        let mut slow = channels.listen("c");
        for i in 0..=BUFFER {
            channels.tell("c", Heard::Message(i.to_string().into()));
        }
        assert_eq!(slow.next().await, Heard::Missed);
        assert_eq!(
            slow.next().await,
            Heard::Message("1".into()),
            "then what is kept"
        );
    }
}
