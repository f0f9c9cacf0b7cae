//! The Redis side of [`Channels`]: one connection of this store's own, subscribed with sharded
//! pub/sub (`SSUBSCRIBE`) to each channel that has a listener in this process, so on a Cluster
//! a channel's messages travel to its shard's master only (its name carries the hash tag of the
//! keys whose script publishes on it). The same commands work on a standalone server.
//!
//! A channel is subscribed when its first listener comes and unsubscribed when its last one
//! goes. Each subscription made (first or again after a reconnect) tells the channel's
//! listeners [`Heard::Missed`], so they read the state afresh once they can no longer miss a
//! change; a lost connection tells every listener [`Heard::Lost`].

use std::sync::Arc;
use std::time::Duration;

use fred::prelude::*;
use tokio::sync::mpsc;

use super::RedisStore;
use crate::store::channels::{Change, Channels, Heard};

/// How often the subscriber checks whether its store is gone.
const STORE_CHECK: Duration = Duration::from_secs(10);

/// This store's channels, with the task that subscribes them; made by the first listener.
pub(super) fn start(store: &RedisStore) -> Arc<Channels> {
    let (tx, changes) = mpsc::unbounded_channel();
    let channels = Arc::new(Channels::subscribed(tx));
    let (config, timeout) = store.subscriber().clone();
    let client = Builder::from_config(config)
        .with_performance_config(|perf| perf.default_command_timeout = timeout)
        .set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2))
        .build();
    match client {
        Ok(client) => {
            tokio::spawn(run(client, Arc::downgrade(&channels), changes));
        }
        Err(e) => {
            tracing::warn!(error = %e, "event channels off: cannot build a subscriber");
        }
    }
    channels
}

async fn run(
    client: Client,
    channels: std::sync::Weak<Channels>,
    mut changes: mpsc::UnboundedReceiver<Change>,
) {
    let mut messages = client.message_rx();
    let mut reconnects = client.reconnect_rx();
    let mut errors = client.error_rx();
    client.connect();
    let mut check = tokio::time::interval(STORE_CHECK);
    // fred tells of the first connection as of a reconnection: the channels opened before it
    // were subscribed by their own `Opened`, which waited for it.
    let mut connected_before = false;
    loop {
        tokio::select! {
            change = changes.recv() => {
                let (Some(change), Some(channels)) = (change, channels.upgrade()) else { break };
                match change {
                    Change::Opened(name) => subscribe(&client, &channels, &name).await,
                    Change::Closed(name) => {
                        if !channels.is_open(&name) {
                            let _ = client.sunsubscribe(name.to_string()).await;
                        }
                    }
                }
            }
            message = messages.recv() => match message {
                Ok(message) => {
                    let Some(channels) = channels.upgrade() else { break };
                    if let Some(text) = message.value.as_str() {
                        channels.tell(&message.channel, Heard::Message(text.as_ref().into()));
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let Some(channels) = channels.upgrade() else { break };
                    channels.tell_all(&Heard::Missed);
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
            reconnected = reconnects.recv() => {
                let Some(channels) = channels.upgrade() else { break };
                if reconnected.is_ok() && std::mem::replace(&mut connected_before, true) {
                    // The server forgot the subscriptions with the connection.
                    for name in channels.names() {
                        subscribe(&client, &channels, &name).await;
                    }
                }
            }
            error = errors.recv() => {
                let Some(channels) = channels.upgrade() else { break };
                if let Ok((error, _)) = error {
                    tracing::debug!(%error, "event channels lost their connection");
                    channels.tell_all(&Heard::Lost);
                }
            }
            _ = check.tick() => {
                if channels.strong_count() == 0 {
                    break;
                }
            }
        }
    }
    let _ = client.quit().await;
}

async fn subscribe(client: &Client, channels: &Channels, name: &str) {
    match client.ssubscribe(name.to_owned()).await {
        // Listening from here on: what changed before is read afresh.
        Ok(()) => channels.tell(name, Heard::Missed),
        Err(error) => {
            tracing::debug!(%error, channel = name, "event channel not subscribed");
            channels.tell(name, Heard::Lost);
        }
    }
}
