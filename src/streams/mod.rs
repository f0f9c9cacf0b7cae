//! Server-sent event streams as every live route opens them (docs/api.md "Events"): how many a
//! client holds ([`Streams::admit`], `GATEWAY_MAX_STREAMS_PER_CLIENT`), the `retry:` hint
//! first, a heartbeat comment on a quiet stream (`GATEWAY_EVENTS_HEARTBEAT_MS`), the end after
//! `GATEWAY_EVENTS_MAX_AGE_S` or at shutdown. A domain gives the events; this module names none.
//!
//! [`feed`]: one feed per watched resource per process, which its clients' streams read.
//!
//! [`wire`]: the events' framing and the body that writes them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::EventStreams;
use crate::error::ApiError;

pub mod feed;
mod relay;
mod wire;

pub use feed::{Feeds, Opened, Source};
pub use wire::{Frames, RECONNECT};

/// The open event streams of this process, by client.
#[derive(Debug)]
pub struct Streams {
    settings: EventStreams,
    clock: Clock,
    open: Mutex<HashMap<String, usize>>,
    /// Set at shutdown: every stream ends.
    ending: watch::Sender<bool>,
}

/// One open stream of a client, counted until it is dropped (the stream's end).
#[derive(Debug)]
pub struct Ticket {
    streams: Arc<Streams>,
    client: String,
}

/// `gateway_event_streams_open`, resolved once.
fn open_gauge() -> &'static metrics::Gauge {
    static GAUGE: std::sync::LazyLock<metrics::Gauge> =
        std::sync::LazyLock::new(|| metrics::gauge!("gateway_event_streams_open"));
    &GAUGE
}

impl Drop for Ticket {
    fn drop(&mut self) {
        open_gauge().decrement(1.0);
        let mut open = lock(&self.streams.open);
        if let Some(n) = open.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.client);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How a domain's stream ended, when it ended on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The store was lost: the client is told (`event: error`) and reconnects once it is back.
    StoreLost,
}

impl Streams {
    pub fn new(settings: EventStreams, clock: Clock) -> Self {
        Self {
            settings,
            clock,
            open: Mutex::default(),
            ending: watch::channel(false).0,
        }
    }

    /// Counts one more stream of `client` (its identity: `c:<id>` or `ip:<address>`), or
    /// refuses it (`429`) past the cap.
    pub fn admit(self: &Arc<Self>, client: &str) -> Result<Ticket, ApiError> {
        let mut open = lock(&self.open);
        let n = open.entry(client.to_owned()).or_default();
        if *n >= self.settings.per_client {
            return Err(ApiError::TooManyStreams(self.settings.per_client));
        }
        *n += 1;
        open_gauge().increment(1.0);
        Ok(Ticket {
            streams: self.clone(),
            client: client.to_owned(),
        })
    }

    /// Streams `client` holds open now.
    pub fn held(&self, client: &str) -> usize {
        lock(&self.open).get(client).copied().unwrap_or(0)
    }

    /// Ends every stream (shutdown): each gets its last event and closes, so the server's
    /// drain is not held by them.
    pub fn end_all(&self) {
        self.ending.send_replace(true);
    }

    /// The response for one stream: `first` (the current state's events), then `events`
    /// until they end, the stream's age passes `GATEWAY_EVENTS_MAX_AGE_S` or the server shuts
    /// down. `events` yielding `Err` ends the stream with that event as its last.
    pub fn respond<S>(&self, ticket: Ticket, first: Bytes, events: S) -> Response
    where
        S: Stream<Item = Result<Bytes, Ended>> + Send + 'static,
    {
        let mut ending = self.ending.subscribe();
        let clock = self.clock.clone();
        let max_age = self.settings.max_age;
        let over = async move {
            tokio::select! {
                () = clock.sleep(max_age) => {}
                _ = ending.wait_for(|ending| *ending) => {}
            }
        };
        let live = wire::Live::new(
            ticket,
            first,
            Box::pin(events),
            Box::pin(over),
            self.settings.heartbeat,
        );
        (
            [
                (CONTENT_TYPE, "text/event-stream"),
                (CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(live),
        )
            .into_response()
    }
}

impl Streams {
    /// The response of a live route: `key`'s stream for `client` (its identity), counted
    /// against its cap; `None` for an unknown resource (the route says how it is unknown).
    pub async fn open<S: Source>(
        self: &Arc<Self>,
        client: &str,
        feeds: &Arc<Feeds<S>>,
        key: &S::Key,
    ) -> Result<Option<Response>, ApiError> {
        let ticket = self.admit(client)?;
        Ok(match feeds.open(key).await {
            Ok(Some((first, rest))) => Some(self.respond(ticket, first, rest)),
            Ok(None) => None,
            Err(_) => Some(self.lost(ticket)),
        })
    }

    /// A stream that ends at once with `event: error` (the store could not be reached when it
    /// opened): EventSource reconnects after a stream's end, not after an error status.
    pub fn lost(&self, ticket: Ticket) -> Response {
        let lost = stream::once(async { Err(Ended::StoreLost) });
        self.respond(ticket, Bytes::new(), lost)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn streams(per_client: usize) -> Arc<Streams> {
        Arc::new(Streams::new(
            EventStreams {
                heartbeat: Duration::from_secs(15),
                max_age: Duration::from_secs(3_600),
                per_client,
            },
            Clock::system(),
        ))
    }

    #[test]
    fn a_client_holds_at_most_its_cap_and_gets_a_place_back_when_one_ends() {
        let s = streams(2);
        let a = s.admit("ip:1").unwrap();
        let _b = s.admit("ip:1").unwrap();
        assert!(matches!(s.admit("ip:1"), Err(ApiError::TooManyStreams(2))));
        let _other = s.admit("ip:2").expect("another client's own cap");
        drop(a);
        assert_eq!(s.held("ip:1"), 1);
        let _c = s.admit("ip:1").expect("a place came back");
    }
}
