//! What a stream writes: events framed as `text/event-stream` ([`Frames`]) and the body that
//! carries them ([`Live`]: the first events, the feed's, a heartbeat comment on a quiet
//! stream, the last words).
//!
//! Framed here rather than with axum's `Sse`: its `Event` is built and serialized per client,
//! while a feed's change is the same bytes for every client that saw the state before it, so
//! they are framed once per change and each client's stream hands on a shared `Bytes` (an
//! event then costs a client its wake-up and its write). The format is the few lines of the
//! WHATWG "server-sent events" section that these events use: `event:`, `id:`, one `data:`
//! line (compact JSON has no line breaks), `retry:` and comment lines.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use futures::Stream;
use tokio::time::{Instant, Sleep};

use super::{Ended, Ticket};

/// Events as they go on the wire, every one with the same `id:`.
#[derive(Debug)]
pub struct Frames<'a> {
    id: &'a str,
    buf: Vec<u8>,
}

impl<'a> Frames<'a> {
    pub(super) fn new(id: &'a str) -> Self {
        Self {
            id,
            buf: Vec::new(),
        }
    }

    /// Adds an event of kind `kind` whose data is `data` as JSON.
    pub fn push(&mut self, kind: &str, data: &impl serde::Serialize) {
        let buf = &mut self.buf;
        buf.extend_from_slice(b"event: ");
        buf.extend_from_slice(kind.as_bytes());
        buf.extend_from_slice(b"\nid: ");
        buf.extend_from_slice(self.id.as_bytes());
        buf.extend_from_slice(b"\ndata: ");
        // Our payloads are plain structs of numbers and strings: they always serialize. Were
        // one not to, the event would still go out, with `null`, rather than the stream stop.
        if serde_json::to_writer(&mut *buf, data).is_err() {
            buf.extend_from_slice(b"null");
        }
        buf.extend_from_slice(b"\n\n");
    }

    pub(super) fn bytes(self) -> Bytes {
        Bytes::from(self.buf)
    }
}

/// How long EventSource waits before it reconnects a stream that ended (the `retry:` field):
/// short, since a stream ends on purpose (its age, a shutdown, the store lost) and the client
/// is to come back for the current state.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// The stream's first line: EventSource's reconnect delay ([`RECONNECT`]).
const RETRY: &[u8] = b"retry: 1000\n\n";

/// The last event of a stream whose store was lost.
const LOST: &[u8] = b"event: error\ndata: {\"code\":\"backend_unavailable\"}\n\n";

/// A comment line: bytes on a quiet stream, which no client shows.
const HEARTBEAT: &[u8] = b":\n\n";

/// One stream's body.
pub(super) struct Live {
    /// The `retry:` line and the current state's events, sent first.
    head: Option<Bytes>,
    events: Pin<Box<dyn Stream<Item = Result<Bytes, Ended>> + Send>>,
    /// Ends the stream: its age, or the server's shutdown.
    over: Pin<Box<dyn Future<Output = ()> + Send>>,
    heartbeat: Duration,
    /// Wakes the stream to see whether it was quiet for `heartbeat`. Not reset per event (a
    /// timer-wheel update per write): it notes the time instead, and when it fires early it
    /// is set again for the rest of the quiet spell.
    beat: Pin<Box<Sleep>>,
    sent_at: Instant,
    done: bool,
    /// Counts the stream against its client's cap until the body is dropped.
    _ticket: Ticket,
}

impl Live {
    pub(super) fn new(
        ticket: Ticket,
        first: Bytes,
        events: Pin<Box<dyn Stream<Item = Result<Bytes, Ended>> + Send>>,
        over: Pin<Box<dyn Future<Output = ()> + Send>>,
        heartbeat: Duration,
    ) -> Self {
        let mut head = Vec::with_capacity(RETRY.len() + first.len());
        head.extend_from_slice(RETRY);
        head.extend_from_slice(&first);
        let now = Instant::now();
        Self {
            head: Some(head.into()),
            events,
            over,
            heartbeat,
            beat: Box::pin(tokio::time::sleep_until(now + heartbeat)),
            sent_at: now,
            done: false,
            _ticket: ticket,
        }
    }

    fn sent(&mut self, bytes: Bytes) -> Poll<Option<Result<Bytes, Infallible>>> {
        self.sent_at = Instant::now();
        Poll::Ready(Some(Ok(bytes)))
    }
}

impl Stream for Live {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(head) = this.head.take() {
            return this.sent(head);
        }
        if this.over.as_mut().poll(cx).is_ready() {
            this.done = true;
            return Poll::Ready(None);
        }
        loop {
            match this.events.as_mut().poll_next(cx) {
                // A change that shows nothing to this client (a queue's count the same).
                Poll::Ready(Some(Ok(bytes))) if bytes.is_empty() => continue,
                Poll::Ready(Some(Ok(bytes))) => return this.sent(bytes),
                Poll::Ready(Some(Err(Ended::StoreLost))) => {
                    this.done = true;
                    return this.sent(Bytes::from_static(LOST));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => break,
            }
        }
        while this.beat.as_mut().poll(cx).is_ready() {
            let due = this.sent_at + this.heartbeat;
            if due <= Instant::now() {
                this.beat.as_mut().reset(Instant::now() + this.heartbeat);
                return this.sent(Bytes::from_static(HEARTBEAT));
            }
            this.beat.as_mut().reset(due);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::StreamExt;

    use super::*;
    use crate::clock::Clock;
    use crate::config::EventStreams;
    use crate::streams::Streams;

    fn frames(id: &str, f: impl FnOnce(&mut Frames<'_>)) -> Bytes {
        let mut frames = Frames::new(id);
        f(&mut frames);
        frames.bytes()
    }

    #[test]
    fn events_are_framed_as_event_source_reads_them() {
        let bytes = frames("7-2", |f| {
            f.push("stock", &serde_json::json!({"stock": 1, "note": "a\nb"}));
            f.push("status", &"active");
        });
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "event: stock\nid: 7-2\ndata: {\"note\":\"a\\nb\",\"stock\":1}\n\n\
             event: status\nid: 7-2\ndata: \"active\"\n\n"
        );
    }

    fn body(events: Vec<Result<Bytes, Ended>>, quiet_after: bool) -> Live {
        let streams = Arc::new(Streams::new(
            EventStreams {
                heartbeat: Duration::from_secs(15),
                max_age: Duration::from_secs(3_600),
                per_client: 4,
            },
            Clock::system(),
        ));
        let ticket = streams.admit("ip:1").unwrap();
        let events = futures::stream::iter(events);
        let events: Pin<Box<dyn Stream<Item = _> + Send>> = if quiet_after {
            Box::pin(events.chain(futures::stream::pending()))
        } else {
            Box::pin(events)
        };
        Live::new(
            ticket,
            Bytes::from_static(b"event: a\n\n"),
            events,
            Box::pin(std::future::pending()),
            Duration::from_secs(15),
        )
    }

    async fn next(live: &mut Live) -> Option<String> {
        let bytes = live.next().await?.unwrap();
        Some(String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_gets_a_comment_once_per_quiet_spell() {
        let mut live = body(vec![], true);
        let opened = Instant::now();
        assert_eq!(
            next(&mut live).await.unwrap(),
            "retry: 1000\n\nevent: a\n\n"
        );
        assert_eq!(next(&mut live).await.unwrap(), ":\n\n");
        assert_eq!(opened.elapsed(), Duration::from_secs(15));
        assert_eq!(next(&mut live).await.unwrap(), ":\n\n");
        assert_eq!(opened.elapsed(), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn the_heartbeat_counts_from_the_last_event_and_a_lost_store_is_the_last_word() {
        let mut live = body(
            vec![Ok(Bytes::new()), Ok(Bytes::from_static(b"e\n\n"))],
            true,
        );
        next(&mut live).await;
        tokio::time::advance(Duration::from_secs(10)).await;
        // The empty change shows nothing; the next one goes out.
        assert_eq!(next(&mut live).await.unwrap(), "e\n\n");
        let sent = Instant::now();
        assert_eq!(next(&mut live).await.unwrap(), ":\n\n");
        assert_eq!(
            sent.elapsed(),
            Duration::from_secs(15),
            "15 s after the event"
        );

        let mut lost = body(
            vec![Err(Ended::StoreLost), Ok(Bytes::from_static(b"x"))],
            false,
        );
        next(&mut lost).await;
        assert_eq!(
            next(&mut lost).await.unwrap(),
            "event: error\ndata: {\"code\":\"backend_unavailable\"}\n\n"
        );
        assert_eq!(next(&mut lost).await, None, "nothing after the last word");
    }
}
