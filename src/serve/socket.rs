//! The socket of one HTTP/1 connection ([`Watched`]): it tells the connection's [`Traffic`]
//! when bytes go either way and where a request's head may begin, closes the connection when
//! its answers are not read, and writes a problem document in place of each of hyper's own
//! empty refusals.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::clock::Traffic;
use super::deadline::{Abort, WriteClock};
use super::{MAX_HEADER_FIELDS, MAX_HEAD_BYTES};
use crate::error::{ApiError, Problem};

/// A socket that notes when bytes last went either way (hyper has an HTTP/2 keep-alive but no
/// HTTP/1 idle timeout, hence this), that starts the header clock of a request pipelined
/// behind another, that ends the connection when the socket takes nothing for the write
/// timeout ([`WriteClock`]), and that turns hyper's own refusals into problem documents.
///
/// The next request's head: hyper reads the socket while it answers a request only when its
/// read buffer is empty (to notice a client that hangs up: `mid_message_detect_eof` in
/// hyper's `proto/h1/conn.rs`), and not at all when the bytes of a next request are in it. So
/// at an answer's first write, a last read that found nothing means the connection is idle
/// after the answer, and one that brought bytes means a next request began with them: its
/// header clock runs from their arrival, not from a next byte that may never come. (They may
/// instead be the rest of a body the answer did not read, which hyper then skips: the next
/// head's clock runs from their arrival all the same, the price of not parsing HTTP here.)
///
/// A request hyper refuses to parse (a malformed request line or header field, bad framing
/// headers, a head over `MAX_HEAD_BYTES` or `MAX_HEADER_FIELDS`) never reaches the service:
/// hyper answers it itself, `400` or `431` (`414` past its own 64 KiB target bound, which the
/// head bound makes unreachable) with an empty body, and closes. Hyper has no hook for those
/// answers, so they are recognised here, as the first write after a request's bytes that is
/// exactly such a head, and a problem document is written instead. The service's own error
/// responses never match: every one has a problem body. Costs a 3-byte compare per response.
#[derive(Debug)]
pub(super) struct Watched<S: Abort = TcpStream> {
    inner: S,
    traffic: Arc<Traffic>,
    clock: WriteClock,
    /// A refusal being written in place of hyper's, and how much of it is written.
    refusal: Option<(Vec<u8>, usize)>,
    /// Bytes were read since the last write.
    fresh: bool,
    /// When the last read brought bytes (as `Traffic::read` gave it); `None` once a read found
    /// none.
    buffered: Option<u64>,
    /// The traffic's answer count at the last write.
    answers: u32,
}

impl<S: Abort> Watched<S> {
    pub(super) fn new(inner: S, traffic: Arc<Traffic>, clock: WriteClock) -> Self {
        Self {
            inner,
            traffic,
            clock,
            refusal: None,
            fresh: false,
            buffered: None,
            answers: 0,
        }
    }

    /// Notes a write; whether it is the first since a request's bytes came.
    fn writing(&mut self) -> bool {
        self.traffic.wrote();
        let answers = self.traffic.answers();
        if answers != self.answers {
            self.answers = answers;
            self.traffic.answering(self.buffered);
        }
        std::mem::take(&mut self.fresh)
    }

    /// `polled`, a write of the socket, past the write clock: a stall of the write timeout is
    /// the connection's end, and a hard one.
    fn clocked<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        let checked = self.clock.check(cx, polled);
        if self.clock.expired() {
            self.inner.abort();
        }
        checked
    }
}

impl<S: Abort> Drop for Watched<S> {
    fn drop(&mut self) {
        if self.traffic.aborted() {
            self.inner.abort();
        }
    }
}

impl<S: AsyncWrite + Abort + Unpin> Watched<S> {
    /// Writes the refusal, then tells hyper its own `claimed` bytes went out.
    fn poll_refusal(
        &mut self,
        cx: &mut Context<'_>,
        claimed: usize,
    ) -> Poll<std::io::Result<usize>> {
        let Some((bytes, mut written)) = self.refusal.take() else {
            return Poll::Ready(Ok(0));
        };
        let done = loop {
            if written == bytes.len() {
                break Poll::Ready(Ok(claimed));
            }
            let polled = Pin::new(&mut self.inner).poll_write(cx, &bytes[written..]);
            match self.clocked(cx, polled) {
                Poll::Ready(Ok(0)) => break Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => written += n,
                other => break other,
            }
        };
        self.refusal = Some((bytes, written));
        done
    }
}

/// The response to send instead of `head` when `head` is one of hyper's own refusals (a whole
/// `HTTP/1.1` 400, 414 or 431 head with `content-length: 0`): the same head, with the length
/// of a problem document, and the document. `None` for anything else.
fn problem_for(head: &[u8]) -> Option<Vec<u8>> {
    const EMPTY: &[u8] = b"\r\ncontent-length: 0\r\n";
    // Called on the first write of every response: most leave at the status.
    let status = head.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    if !matches!(status, b"400" | b"414" | b"431") || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let at = head.windows(EMPTY.len()).position(|w| w == EMPTY)?;
    let error = match status {
        b"400" => ApiError::invalid(
            "the request could not be parsed: a malformed request line or header field, or \
             invalid framing (Content-Length, Transfer-Encoding)",
        ),
        b"414" => ApiError::UriTooLong("the request target is too long".to_owned()),
        _ => ApiError::HeadersTooLarge(format!(
            "the request head is over {MAX_HEAD_BYTES} bytes or has more than \
             {MAX_HEADER_FIELDS} header fields"
        )),
    };
    let status = error.status();
    let problem = Problem {
        kind: "about:blank".to_owned(),
        title: status.canonical_reason().unwrap_or("Error").to_owned(),
        status: status.as_u16(),
        detail: error.to_string(),
        code: error.code().to_owned(),
        trace_id: None,
        extra: serde_json::Map::new(),
    };
    let body = serde_json::to_vec(&problem).ok()?;
    // Hyper's head with its empty length replaced: its status line, `connection: close` and
    // date stay.
    let mut out = Vec::with_capacity(head.len() + body.len() + 64);
    out.extend_from_slice(&head[..at]);
    out.extend_from_slice(b"\r\ncontent-type: application/problem+json\r\ncontent-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&head[at + EMPTY.len()..]);
    out.extend_from_slice(&body);
    Some(out)
}

impl<S: AsyncRead + Abort + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.fresh = true;
            self.buffered = Some(self.traffic.read());
        } else {
            self.buffered = None;
        }
        polled
    }
}

impl<S: AsyncWrite + Abort + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.writing() && this.refusal.is_none() {
            this.refusal = problem_for(buf).map(|p| (p, 0));
        }
        if this.refusal.is_some() {
            return this.poll_refusal(cx, buf.len());
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.clocked(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.writing() && this.refusal.is_none() {
            // A refusal has no body: its head is the whole write.
            if let [head] = bufs {
                this.refusal = problem_for(head).map(|p| (p, 0));
            }
        }
        if this.refusal.is_some() {
            return this.poll_refusal(cx, bufs.iter().map(|b| b.len()).sum());
        }
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.clocked(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.clocked(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.clocked(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_refusals_become_problems_and_nothing_else_does() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\
                     content-length: 0\r\ndate: Wed, 25 Nov 2026 21:52:45 GMT\r\n\r\n";
        let out = String::from_utf8(problem_for(head).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        assert!(head.contains("\r\ncontent-type: application/problem+json\r\n"));
        assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())));
        assert!(head.contains("\r\ndate: "), "{head}");
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["code"], "headers_too_large");
        assert_eq!(problem["status"], 431);

        // A response with a body, another status, or half a head is left alone.
        let ok = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\n\
                   content-length: 12\r\n\r\n";
        assert!(problem_for(ok).is_none());
        assert!(problem_for(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(problem_for(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n").is_none());
    }
}
