//! The socket of one HTTP/2 connection ([`Framed`]): it follows the frames either way, holds
//! the client's control frames to a budget (past it, `GOAWAY ENHANCE_YOUR_CALM` and the
//! close), closes the connection when its answers are not read (the socket takes nothing, or
//! an answer begun sends nothing: a zero window), and closes it hard then.
//!
//! Hand-rolled because neither hyper nor h2 has a bound on these frames (h2 0.4.20 bounds
//! resets of streams not yet taken up, small `DATA` frames and `CONTINUATION`s, nothing
//! else): h2 answers every `SETTINGS` and `PING` and takes every `PRIORITY`, `WINDOW_UPDATE`
//! and `RST_STREAM` of a closed stream, a core's worth for one flooding client; and neither
//! has a write timeout, nor says when an answer waits on the client's window. Following the
//! frames costs a 9-byte head per frame; the payloads, `DATA` above all, are skipped over.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::deadline::{Abort, WriteClock};
use super::h2::Streams;
use follow::Follow;

mod follow;

/// The client connection preface (RFC 9113 §3.4), which comes before the client's frames.
const PREFACE_LEN: usize = 24;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Control frames a client may send at once: every frame but `DATA`, `HEADERS` and
/// `CONTINUATION` (a request and its body) costs one. A client sends a handful when it
/// connects (`SETTINGS`, a `WINDOW_UPDATE` of the connection's window, a few `PRIORITY` frames
/// for Firefox's stream groups, the acknowledgements of the server's) and a few now and then
/// (`PING`s to keep the connection alive or measure it); 1,000 is far above any of that.
const CONTROL_BURST: u32 = 1_000;

/// Control frames a second, past the burst: `PING`s every 10 ms, or `SETTINGS` changed as
/// often, more than any real client sends besides what its requests and the server's `DATA`
/// pay for (below). A client sending faster runs the bucket dry and is cut: a flood ends
/// within its first thousand frames or so, where hundreds of thousands a second kept a core
/// busy.
const CONTROL_PER_SECOND: u32 = 100;

/// Control frames each request (a `HEADERS` frame from the client) adds to the budget: a
/// browser or a proxy resets (`RST_STREAM`) the requests it no longer needs, by the hundred
/// when a page is left, and reprioritizes them (`PRIORITY`, `PRIORITY_UPDATE`).
const CONTROL_PER_REQUEST: u32 = 2;

/// Control frames each `DATA` frame sent adds to the budget, plus one per 4 KiB of its
/// payload: a client acknowledges what it reads with `WINDOW_UPDATE`s, most at most one for
/// the stream and one for the connection per frame (they wait for half a window to be read),
/// some as often as every 4 KiB read. So a client downloading any amount never runs short.
const CONTROL_PER_DATA: u32 = 2;

/// A socket speaking HTTP/2 (after the preface, or TLS with ALPN `h2`), between the client and
/// hyper. See the module's documentation.
#[derive(Debug)]
pub(super) struct Framed<S: Abort> {
    inner: S,
    streams: Arc<Streams>,
    clock: WriteClock,
    /// How long an answer begun may send nothing.
    timeout: Duration,
    read: Follow,
    written: Follow,
    budget: Budget,
    /// The streams whose answer has begun (`HEADERS` written) and not ended: no more than the
    /// streams a connection may have open.
    answering: Vec<u32>,
    /// When bytes of an answer were last written.
    answered_at: Instant,
    /// Wakes the connection when an answer begun may have sent nothing for `timeout`.
    stuck: Option<Pin<Box<Sleep>>>,
    /// `stuck` was polled since it was last set: it will wake this connection's task.
    stuck_armed: bool,
    /// The highest stream the client opened: the `GOAWAY`'s last stream.
    last_stream: u32,
    /// Once the budget is spent: the `GOAWAY` to send, and how much of it is written.
    goaway: Option<([u8; 17], usize)>,
}

impl<S: Abort> Framed<S> {
    pub(super) fn new(inner: S, streams: Arc<Streams>, timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            inner,
            streams,
            clock: WriteClock::new(timeout),
            timeout,
            read: Follow::after(PREFACE_LEN),
            written: Follow::after(0),
            budget: Budget {
                tokens: CONTROL_BURST,
                since: now,
            },
            answering: Vec::new(),
            answered_at: now,
            stuck: None,
            stuck_armed: false,
            last_stream: 0,
            goaway: None,
        }
    }

    /// Follows the frames of `bytes`, just read; `Some` offset where the client's budget ran
    /// out, at the start of the frame that overdrew it.
    fn have_read(&mut self, bytes: &[u8]) -> Option<usize> {
        self.read.over(bytes, |head| match head.kind {
            DATA | CONTINUATION => true,
            HEADERS => {
                self.last_stream = self.last_stream.max(head.stream);
                self.budget.earn(CONTROL_PER_REQUEST);
                true
            }
            kind => {
                if kind == RST_STREAM {
                    // The client gave up on the answer, if one was begun.
                    self.answering.retain(|&s| s != head.stream);
                }
                self.budget.spend()
            }
        })
    }

    /// Follows the frames of `bytes`, just written.
    fn have_written(&mut self, bytes: &[u8]) {
        let mut answer = self.written.in_answer();
        self.written.over(bytes, |head| {
            if matches!(head.kind, HEADERS | DATA | RST_STREAM) {
                let ends = head.flags & END_STREAM != 0;
                let known = self.answering.iter().position(|&s| s == head.stream);
                match (head.kind, known) {
                    // An answer's head (an informational one before it is counted already).
                    (HEADERS, None) if !ends => self.answering.push(head.stream),
                    (HEADERS | DATA, Some(at)) if ends => _ = self.answering.swap_remove(at),
                    (RST_STREAM, Some(at)) => _ = self.answering.swap_remove(at),
                    _ => {}
                }
            }
            if head.kind == DATA {
                self.budget.earn(CONTROL_PER_DATA + head.len / (4 * 1024));
            }
            answer |= matches!(head.kind, DATA | HEADERS | CONTINUATION);
            true
        });
        if answer && !self.answering.is_empty() {
            self.answered_at = Instant::now();
        }
    }
}

impl<S: AsyncWrite + Abort + Unpin> Framed<S> {
    /// `polled`, a write of the socket, past the write clock, which makes a stall of the
    /// timeout the connection's hard end.
    fn clocked<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let checked = self.clock.check(cx, polled);
        if self.clock.expired() {
            self.inner.abort();
        }
        checked
    }

    /// Ready once an answer begun has sent nothing for the timeout (the client's window stays
    /// shut); else registers `cx` to look again then. The timer is moved only when it fires,
    /// not at each write, and polled only when it has fired or was just set: it is looked at
    /// on every read and write while an answer is under way.
    fn poll_stuck(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.answering.is_empty() {
            return Poll::Pending;
        }
        if self.stuck_armed && self.stuck.as_ref().is_some_and(|s| !s.is_elapsed()) {
            return Poll::Pending;
        }
        let due = self.answered_at + self.timeout;
        let sleep = self
            .stuck
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                self.stuck_armed = true;
                return Poll::Pending;
            }
            if sleep.deadline() >= due {
                return Poll::Ready(());
            }
            sleep.as_mut().reset(due);
        }
    }

    /// After a write: arms the stuck answers' timer if an answer began. Hyper writes an answer
    /// after its read of the socket has found nothing, so the read's own look came too early;
    /// and it may read no more.
    fn look_after_writing(&mut self, cx: &mut Context<'_>) {
        if self.poll_stuck(cx).is_ready() {
            // The read that follows ends the connection.
            cx.waker().wake_by_ref();
        }
    }

    /// Writes the `GOAWAY` once what hyper has written ends at a frame's end (hyper finishes
    /// its frame through `poll_write`), then shuts the socket's sending side so the client
    /// reads it before the close; ready with the connection's end.
    fn poll_goaway(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if !self.written.at_boundary() {
            return Poll::Pending;
        }
        while let Some((frame, written)) = self.goaway.as_mut().filter(|(f, w)| *w < f.len()) {
            let polled = Pin::new(&mut self.inner).poll_write(cx, &frame[*written..]);
            match ready!(self.clock.check(cx, polled)) {
                Ok(0) => return Poll::Ready(io::ErrorKind::WriteZero.into()),
                Ok(n) => *written += n,
                Err(e) => return Poll::Ready(e),
            }
        }
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        if let Err(e) = ready!(self.clock.check(cx, polled)) {
            return Poll::Ready(e);
        }
        Poll::Ready(io::Error::other(
            "HTTP/2 control frames past the budget: GOAWAY ENHANCE_YOUR_CALM",
        ))
    }
}

impl<S: Abort> Drop for Framed<S> {
    fn drop(&mut self) {
        if self.streams.aborted() {
            self.inner.abort();
        }
    }
}

/// The `GOAWAY` frame: `last_stream`, `ENHANCE_YOUR_CALM`.
fn goaway(last_stream: u32) -> [u8; 17] {
    let mut frame = [0u8; 17];
    frame[2] = 8;
    frame[3] = GOAWAY;
    frame[9..13].copy_from_slice(&last_stream.to_be_bytes());
    frame[13..].copy_from_slice(&ENHANCE_YOUR_CALM.to_be_bytes());
    frame
}

impl<S: AsyncRead + AsyncWrite + Abort + Unpin> AsyncRead for Framed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.goaway.is_some() {
            return this.poll_goaway(cx).map(Err);
        }
        if this.poll_stuck(cx).is_ready() {
            this.inner.abort();
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "an HTTP/2 answer sent nothing for the write timeout (the client's window is shut)",
            )));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if let Some(at) = this.have_read(&buf.filled()[before..]) {
            // Hyper gets nothing from the frame that overdrew the budget on.
            buf.set_filled(before + at);
            this.goaway = Some((goaway(this.last_stream), 0));
            if at == 0 {
                return this.poll_goaway(cx).map(Err);
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Abort + Unpin> AsyncWrite for Framed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let mut buf = buf;
        if this.goaway.is_some() {
            if this.written.at_boundary() {
                return this.poll_goaway(cx).map(Err);
            }
            // Hyper's frame is finished, and nothing after it.
            buf = &buf[..buf.len().min(this.written.to_boundary())];
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        let n = ready!(this.clocked(cx, polled))?;
        this.have_written(&buf[..n]);
        this.look_after_writing(cx);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.goaway.is_some() {
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &**b);
            return self.poll_write(cx, first);
        }
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        let n = ready!(this.clocked(cx, polled))?;
        let mut left = n;
        for buf in bufs {
            let take = left.min(buf.len());
            this.have_written(&buf[..take]);
            left -= take;
            if left == 0 {
                break;
            }
        }
        this.look_after_writing(cx);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.clocked(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.clocked(cx, polled)
    }
}

/// The client's control frames: a token bucket of [`CONTROL_BURST`] tokens, refilled at
/// [`CONTROL_PER_SECOND`] and by requests and answers. Reads the clock only when it runs dry,
/// and when it starts to be spent from full.
#[derive(Debug)]
struct Budget {
    tokens: u32,
    /// Since when the tokens refill.
    since: Instant,
}

impl Budget {
    /// Takes a token; `false` when there is none.
    fn spend(&mut self) -> bool {
        if self.tokens == CONTROL_BURST {
            // A full bucket refills no further: the time it spent full earns nothing.
            self.since = Instant::now();
        }
        if self.tokens == 0 {
            let now = Instant::now();
            let elapsed = now.saturating_duration_since(self.since);
            let earned = elapsed.as_millis() as u64 * u64::from(CONTROL_PER_SECOND) / 1000;
            if earned == 0 {
                return false;
            }
            self.tokens = earned.min(u64::from(CONTROL_BURST)) as u32;
            self.since += Duration::from_millis(earned * 1000 / u64::from(CONTROL_PER_SECOND));
        }
        self.tokens -= 1;
        true
    }

    fn earn(&mut self, tokens: u32) {
        self.tokens = self.tokens.saturating_add(tokens).min(CONTROL_BURST);
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    impl Abort for DuplexStream {
        fn abort(&self) {}
    }

    use super::follow::tests::{frame, PING};

    /// The connection's budget runs out at a frame: hyper gets the bytes before it, then the
    /// `GOAWAY` is written once hyper's frame in progress is whole, and the connection ends.
    #[tokio::test]
    async fn a_flood_ends_in_goaway_at_a_frame_boundary() {
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let streams = Arc::new(Streams::new(std::time::Instant::now()));
        let mut framed = Framed::new(server, streams, Duration::from_secs(10));
        let mut flood = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        flood.extend(frame(HEADERS, 0x5, 5, &[0x82]));
        let ping = frame(PING, 0, 0, &[1; 8]);
        for _ in 0..CONTROL_BURST + CONTROL_PER_REQUEST + 5 {
            flood.extend_from_slice(&ping);
        }
        client.write_all(&flood).await.unwrap();

        // Hyper has written half a frame when the flood comes.
        let answer = frame(PING, 0x1, 0, &[1; 8]);
        framed.write_all(&answer[..4]).await.unwrap();
        let mut got = vec![0u8; flood.len()];
        let n = framed.read(&mut got).await.unwrap();
        // The request's tokens do not count: the bucket was full.
        let allowed = 24 + 10 + CONTROL_BURST as usize * ping.len();
        assert_eq!(n, allowed, "hyper reads up to the frame past the budget");
        // Hyper's frame is taken whole, and nothing after it: the connection ends there.
        let rest = [answer[4..].to_vec(), answer.clone()].concat();
        let mut taken = 0;
        let ended = loop {
            let write =
                std::future::poll_fn(|cx| Pin::new(&mut framed).poll_write(cx, &rest[taken..]));
            match write.await {
                Ok(n) => taken += n,
                Err(e) => break e,
            }
        };
        assert_eq!(taken, answer.len() - 4);
        assert_eq!(ended.kind(), io::ErrorKind::Other, "{ended}");
        assert!(
            framed.read(&mut got).await.is_err(),
            "hyper reads nothing more"
        );
        drop(framed);

        let mut sent = Vec::new();
        client.read_to_end(&mut sent).await.unwrap();
        let mut want = answer.clone();
        want.extend(goaway(5));
        assert_eq!(
            sent, want,
            "the frame, then GOAWAY(5, ENHANCE_YOUR_CALM), then the end"
        );
    }

    /// Past the burst, tokens come back at the rate, and the time a full bucket waits earns
    /// nothing.
    #[tokio::test(start_paused = true)]
    async fn the_budget_refills_at_its_rate() {
        let mut budget = Budget {
            tokens: CONTROL_BURST,
            since: Instant::now(),
        };
        tokio::time::advance(Duration::from_secs(60)).await;
        for _ in 0..CONTROL_BURST {
            assert!(budget.spend());
        }
        assert!(!budget.spend(), "an hour full earns no second burst");
        tokio::time::advance(Duration::from_millis(1000 / u64::from(CONTROL_PER_SECOND))).await;
        assert!(budget.spend());
        assert!(!budget.spend());
        budget.earn(3);
        assert!(budget.spend() && budget.spend() && budget.spend());
        assert!(!budget.spend());
    }

    /// An answer begun ends the connection once it has sent nothing for the timeout, however
    /// long it took in all; one ended, or reset by the client, does not.
    #[tokio::test(start_paused = true)]
    async fn an_answer_that_sends_nothing_ends_the_connection() {
        let timeout = Duration::from_secs(10);
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let streams = Arc::new(Streams::new(std::time::Instant::now()));
        let mut framed = Framed::new(server, streams, timeout);
        let mut buf = vec![0u8; 1024];
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        client.write_all(preface).await.unwrap();
        framed.read_exact(&mut buf[..preface.len()]).await.unwrap();

        // Stream 1 answered whole; stream 3 begun, then reset by the client.
        let head = |flags, stream| frame(HEADERS, 0x4 | flags, stream, &[0x88]);
        framed.write_all(&head(END_STREAM, 1)).await.unwrap();
        framed.write_all(&head(0, 3)).await.unwrap();
        let reset = frame(0x3, 0, 3, &8u32.to_be_bytes());
        client.write_all(&reset).await.unwrap();
        framed.read_exact(&mut buf[..reset.len()]).await.unwrap();
        let read = tokio::time::timeout(timeout * 2, framed.read(&mut buf)).await;
        assert!(read.is_err(), "no answer is waiting: {read:?}");

        // Stream 5 begun, and sending a little every half timeout, then nothing more.
        framed.write_all(&head(0, 5)).await.unwrap();
        for _ in 0..4 {
            tokio::time::advance(timeout / 2).await;
            framed
                .write_all(&frame(DATA, 0, 5, &[1; 100]))
                .await
                .unwrap();
        }
        let read = tokio::time::timeout(timeout / 2, framed.read(&mut buf)).await;
        assert!(read.is_err(), "the answer goes on: {read:?}");
        let ended = framed.read(&mut buf).await.unwrap_err();
        assert_eq!(ended.kind(), io::ErrorKind::TimedOut, "{ended}");
    }
}
