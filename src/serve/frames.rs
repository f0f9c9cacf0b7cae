//! The socket of one HTTP/2 connection ([`Framed`]): it follows the frames either way, and
//! closes the connection when its answers are not read (the socket takes nothing, or an answer
//! begun sends nothing: a zero window), hard.
//!
//! Hand-rolled because neither hyper nor h2 (0.4) has a write timeout, nor says when an answer
//! waits on the client's window. Following the frames costs a 9-byte head per frame; the
//! payloads, `DATA` above all, are skipped over.

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

/// The client connection preface (RFC 9113 §3.4), which comes before the client's frames.
const PREFACE_LEN: usize = 24;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;

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
    /// The streams whose answer has begun (`HEADERS` written) and not ended: no more than the
    /// streams a connection may have open.
    answering: Vec<u32>,
    /// When bytes of an answer were last written.
    answered_at: Instant,
    /// Wakes the connection when an answer begun may have sent nothing for `timeout`.
    stuck: Option<Pin<Box<Sleep>>>,
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
            answering: Vec::new(),
            answered_at: now,
            stuck: None,
        }
    }

    /// Follows the frames of `bytes`, just read.
    fn have_read(&mut self, bytes: &[u8]) {
        self.read.over(bytes, |head| {
            if head.kind == RST_STREAM {
                // The client gave up on the answer, if one was begun.
                self.answering.retain(|&s| s != head.stream);
            }
            true
        });
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
    /// not at each write.
    fn poll_stuck(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.answering.is_empty() {
            return Poll::Pending;
        }
        let due = self.answered_at + self.timeout;
        let sleep = self
            .stuck
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        loop {
            ready!(sleep.as_mut().poll(cx));
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
}

impl<S: Abort> Drop for Framed<S> {
    fn drop(&mut self) {
        if self.streams.aborted() {
            self.inner.abort();
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Abort + Unpin> AsyncRead for Framed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.poll_stuck(cx).is_ready() {
            this.inner.abort();
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "an HTTP/2 answer sent nothing for the write timeout (the client's window is shut)",
            )));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.have_read(&buf.filled()[before..]);
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

/// A frame's 9-byte head (RFC 9113 §4.1).
#[derive(Debug, Clone, Copy)]
struct Head {
    len: u32,
    kind: u8,
    flags: u8,
    stream: u32,
}

/// Where one direction's bytes are in its frames, across reads or writes that split them
/// anywhere.
#[derive(Debug)]
struct Follow {
    /// Bytes still to come before the first frame (the client's preface).
    preface: usize,
    head: [u8; 9],
    /// Bytes of `head` come so far.
    have: usize,
    /// Payload bytes of the current frame still to come.
    left: usize,
    /// The current frame's type.
    kind: u8,
}

impl Follow {
    fn after(preface: usize) -> Self {
        Self {
            preface,
            head: [0; 9],
            have: 0,
            left: 0,
            kind: 0,
        }
    }

    /// Goes over `bytes`, telling `frame` each frame head completed in them, until it says
    /// stop: then `Some` offset in `bytes` where that frame began (0 when it began before).
    fn over(&mut self, bytes: &[u8], mut frame: impl FnMut(Head) -> bool) -> Option<usize> {
        let mut at = 0;
        while at < bytes.len() {
            let rest = bytes.len() - at;
            if self.preface > 0 || self.left > 0 {
                let skip = if self.preface > 0 {
                    &mut self.preface
                } else {
                    &mut self.left
                };
                let n = (*skip).min(rest);
                *skip -= n;
                at += n;
                continue;
            }
            let began = if self.have == 0 { at } else { 0 };
            let n = (9 - self.have).min(rest);
            self.head[self.have..self.have + n].copy_from_slice(&bytes[at..at + n]);
            self.have += n;
            at += n;
            if self.have < 9 {
                break;
            }
            self.have = 0;
            let h = &self.head;
            let head = Head {
                len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
                kind: h[3],
                flags: h[4],
                stream: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
            };
            self.left = head.len as usize;
            self.kind = head.kind;
            if !frame(head) {
                return Some(began);
            }
        }
        None
    }

    /// Whether the bytes to come continue an answer's frame.
    fn in_answer(&self) -> bool {
        self.left > 0 && matches!(self.kind, DATA | HEADERS | CONTINUATION)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    impl Abort for DuplexStream {
        fn abort(&self) {}
    }

    const PING: u8 = 0x6;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// The frames are found wherever the reads split them.
    #[test]
    fn frames_are_followed_across_any_split() {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(0x4, 0, 0, &[]));
        bytes.extend(frame(HEADERS, 0x4, 1, &[0x82; 5]));
        bytes.extend(frame(DATA, END_STREAM, 1, &[7; 300]));
        bytes.extend(frame(PING, 0, 0, &[1; 8]));
        let want = vec![(0x4, 0), (HEADERS, 1), (DATA, 1), (PING, 0)];
        for size in 1..bytes.len() {
            let mut follow = Follow::after(PREFACE_LEN);
            let mut seen = Vec::new();
            for chunk in bytes.chunks(size) {
                assert_eq!(
                    follow.over(chunk, |h| {
                        seen.push((h.kind, h.stream));
                        true
                    }),
                    None
                );
            }
            assert_eq!(seen, want, "read {size} bytes at a time");
            assert_eq!((follow.have, follow.left), (0, 0), "at a frame's end");
        }
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
