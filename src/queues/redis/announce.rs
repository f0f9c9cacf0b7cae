//! Enqueue announcements: this process's waiting claims ([`ANNOUNCED`]) and the subscriber
//! that tells them of the other instances' enqueues.

use std::sync::OnceLock;
use std::time::Duration;

use fred::prelude::*;

use crate::store::redis::RedisStore;
use crate::store::slots::{Kept, Slot};

use crate::queues::Bells;

/// How long the claims waiting on a queue go without a look (one of them looks; see
/// `crate::queues::Room`): a safety net for enqueue announcements lost while the subscriber
/// reconnects (enqueues through this instance tell its waiting claims directly, the others
/// through pub/sub).
pub(super) const RECHECK: Duration = Duration::from_secs(5);
/// How often the subscriber checks whether its store is gone.
const LISTENER_CHECK: Duration = Duration::from_secs(10);

/// This process's waiting claims, and the subscriber that tells them of the other instances'
/// enqueues, started by the first claim that waits.
#[derive(Debug, Default)]
pub(super) struct Announced {
    pub(super) bells: Bells,
    pub(super) listening: OnceLock<()>,
}

impl Kept for Announced {}

pub(super) static ANNOUNCED: Slot<Announced> = Slot::new();

impl RedisStore {
    pub(super) fn bells(&self) -> &Bells {
        &self.kept(&ANNOUNCED).bells
    }
}

/// Subscribes to every queue's enqueue announcements (one pattern subscription on its own
/// connection) and tells this process's waiting claims of the other instances' new jobs;
/// re-subscribes after each reconnect and ends once the store is dropped. Each subscription
/// makes the rooms look once: what was announced before it was not heard.
///
/// An announcement is `<origin> <due in ms>` (see `queue_enqueue.lua`): this store's own are
/// skipped, as its enqueues told its rooms already. The queue is the channel's suffix as
/// written, looked up as text: it may be a caller-scoped name, outside the name rule.
///
/// Classic pub/sub on a Cluster too, not sharded: sharded pub/sub has no pattern form, so it
/// would take a subscription per queue being waited on, made and dropped as claims come and
/// go; the price of the classic form is that the Cluster bus carries each announcement (an
/// empty message) to every node.
pub(super) fn listen(store: &RedisStore) {
    let (pattern, name_at) = store.keys.queue_bell_pattern();
    let weak = store.downgrade();
    let client = match Builder::from_config(store.subscriber().0.clone())
        .set_policy(ReconnectPolicy::new_exponential(0, 50, 2_000, 2))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "queue announcements off: cannot build a subscriber");
            return;
        }
    };
    let mut messages = client.message_rx();
    let mut reconnects = client.reconnect_rx();
    client.connect();
    tokio::spawn(async move {
        if client.wait_for_connect().await.is_ok() {
            match client.psubscribe(pattern.clone()).await {
                Ok(()) => {
                    if let Some(store) = weak.upgrade() {
                        store.bells().missed();
                    }
                }
                Err(e) => tracing::warn!(error = %e, "queue announcements: subscribe failed"),
            }
        }
        let mut check = tokio::time::interval(LISTENER_CHECK);
        loop {
            tokio::select! {
                message = messages.recv() => match message {
                    Ok(message) => {
                        let Some(store) = weak.upgrade() else { break };
                        let bells = store.bells();
                        let text = message.value.as_string().unwrap_or_default();
                        let (origin, due_in) = text.split_once(' ').unwrap_or(("", ""));
                        if origin == bells.origin() {
                            continue;
                        }
                        // Unreadable (an older gateway's empty announcement): a look finds out.
                        let due_in = due_in.parse().unwrap_or(0);
                        if let Some(queue) = message.channel.get(name_at..) {
                            bells.created(queue, due_in);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if let Some(store) = weak.upgrade() {
                            store.bells().missed();
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
                reconnected = reconnects.recv() => {
                    if reconnected.is_ok() {
                        let _ = client.psubscribe(pattern.clone()).await;
                        // Announcements made while it was away are gone.
                        if let Some(store) = weak.upgrade() {
                            store.bells().missed();
                        }
                    }
                }
                _ = check.tick() => {
                    if weak.upgrade().is_none() {
                        break;
                    }
                }
            }
        }
        let _ = client.quit().await;
    });
}
