//! Server-sent event streams as every live route opens them (docs/api.md "Events"): how many a
//! client holds ([`Streams::admit`], `GATEWAY_MAX_STREAMS_PER_CLIENT`), the `retry:` hint
//! first, a heartbeat comment on a quiet stream (`GATEWAY_EVENTS_HEARTBEAT_MS`), the end after
//! `GATEWAY_EVENTS_MAX_AGE_S` or at shutdown. A domain gives the events; this module names none.
//!
//! [`feed`]: one feed per watched resource per process, which its clients' streams read.
//!
//! The response is axum's `Sse` (it writes the `text/event-stream` framing and the heartbeat);
//! what is written here is what axum leaves to the application: the cap, the end of a stream
//! and its last words.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::EventStreams;
use crate::error::ApiError;

pub mod feed;

pub use feed::{Feeds, Opened, Source};

/// How long EventSource waits before it reconnects a stream that ended (the `retry:` field):
/// short, since a stream ends on purpose (its age, a shutdown, the store lost) and the client
/// is to come back for the current state.
pub const RECONNECT: Duration = Duration::from_secs(1);

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

impl Drop for Ticket {
    fn drop(&mut self) {
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

    /// The response for one stream: `first` (the current state), then `events` until they end,
    /// the stream's age passes `GATEWAY_EVENTS_MAX_AGE_S` or the server shuts down. `events`
    /// yielding `Err` ends the stream with that event as its last.
    pub fn respond<S>(&self, ticket: Ticket, first: Vec<Event>, events: S) -> Response
    where
        S: Stream<Item = Result<Vec<Event>, Ended>> + Send + 'static,
    {
        let retry = Event::default().retry(RECONNECT);
        let mut ending = self.ending.subscribe();
        let clock = self.clock.clone();
        let max_age = self.settings.max_age;
        let over = async move {
            tokio::select! {
                () = clock.sleep(max_age) => {}
                _ = ending.wait_for(|ending| *ending) => {}
            }
        };
        let body = events
            .take_until(over)
            .flat_map(|batch| {
                let (events, last) = match batch {
                    Ok(events) => (events, false),
                    Err(Ended::StoreLost) => (vec![lost()], true),
                };
                stream::iter(events.into_iter().map(move |e| (e, last)))
            })
            // An event marked last ends the stream after it is sent.
            .scan(false, |done, (event, last)| {
                let out = (!*done).then_some(event);
                *done |= last;
                std::future::ready(out)
            });
        let body = stream::iter(std::iter::once(retry).chain(first))
            .chain(body)
            .map(move |event| {
                // Held as long as the stream is: the client's count drops when it ends.
                let _held = &ticket;
                Ok::<_, Infallible>(event)
            });
        Sse::new(body)
            .keep_alive(KeepAlive::new().interval(self.settings.heartbeat))
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
        self.respond(ticket, Vec::new(), lost)
    }
}

/// The last event of a stream whose store was lost.
fn lost() -> Event {
    Event::default()
        .event("error")
        .data(r#"{"code":"backend_unavailable"}"#)
}

/// An event of kind `kind` with `id` and a JSON body.
pub fn event(kind: &str, id: &str, data: &impl serde::Serialize) -> Event {
    Event::default()
        .event(kind)
        .id(id)
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event(kind).id(id))
}

#[cfg(test)]
mod tests {
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
