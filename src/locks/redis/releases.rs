//! Release announcements: this process's release subscriber ([`RELEASES`]), the waiters it
//! wakes, and the origin its own releases are announced under.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use fred::prelude::*;
use tokio::sync::{mpsc, oneshot};

use crate::store::slots::{Kept, Slot};

use crate::locks::wake::Wakeups;

/// This process's release subscriber and the waiters it wakes.
#[derive(Debug)]
pub(super) struct Releases {
    pub(super) wakeups: Arc<Wakeups>,
    /// The subscriber's mailbox; `None` when it could not be built.
    pub(super) subscriber: OnceLock<Option<mpsc::UnboundedSender<Cmd>>>,
    /// Names this process in its release announcements, so that its own, heard back, are not
    /// counted twice (its releases tell its waiters directly).
    pub(super) origin: String,
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
pub(super) enum Cmd {
    /// One more waiter on this channel, of this lock (subscribe on the first); answered once
    /// subscribed.
    Listen(String, String, oneshot::Sender<()>),
    /// One waiter fewer (unsubscribe after the last).
    Forget(String),
}

impl Kept for Releases {}

pub(super) static RELEASES: Slot<Releases> = Slot::new();

impl Releases {
    /// Starts the subscriber, connecting as `connect` says.
    pub(super) fn start(&self, connect: &(Config, Duration)) -> Option<mpsc::UnboundedSender<Cmd>> {
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
