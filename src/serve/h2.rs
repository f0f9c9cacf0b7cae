//! HTTP/2 on the HTTP/1 port (docs/operations.md "Connections"): telling a connection's
//! protocol from its first bytes ([`sniff`]), hyper's HTTP/2 settings with the guards'
//! bounds ([`builder`]), and the count of a connection's streams that its idle watch reads
//! ([`Streams`], kept by `Counted` around each request).
//!
//! Why not hyper-util's `auto` builder: it reads the first bytes into a buffer of its own
//! and replays them through a wrapper on every read, and its HTTP/1 side cannot bound the
//! request head (`max_header_size`). Peeking leaves the HTTP/1 connection exactly as it was:
//! the same socket and builder, one `MSG_PEEK` read per connection.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioExecutor;
use tokio::net::TcpStream;

use super::requests::Tally;
use super::MAX_HEAD_BYTES;

/// The client connection preface of HTTP/2 with prior knowledge (RFC 9113 §3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The most streams one HTTP/2 connection may have open at once (its
/// `SETTINGS_MAX_CONCURRENT_STREAMS`): a client opening more gets `RST_STREAM` with
/// `REFUSED_STREAM` for each one past it. RFC 9113 §6.5.2 asks for no fewer than 100; more
/// would let one connection hold more of a worker than the per-address cap means it to.
pub const MAX_STREAMS: u32 = 100;

/// Streams a client may reset before the server has taken them up, past which the
/// connection is closed with `GOAWAY ENHANCE_YOUR_CALM`: the defence against "rapid reset"
/// (CVE-2023-44487), where each stream opened and reset at once still costs the server its
/// setting up. The `h2` crate's default, stated here because hyper leaves it unset.
const MAX_PENDING_ACCEPT_RESETS: usize = 20;

/// Streams the server may reset for the client's protocol errors before it closes the
/// connection (`GOAWAY ENHANCE_YOUR_CALM`): hyper's default, stated here to be seen.
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Which protocol a plain-TCP connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    Http1,
    Http2,
}

/// The protocol of `stream`, from its first bytes, left unread: HTTP/2 when they are the
/// connection preface, else HTTP/1 (which answers or closes whatever they are).
///
/// Resolves as soon as one byte differs from the preface; the caller bounds the wait (the
/// header timeout). A client that sends a part of the preface and stops is checked
/// again after a pause that doubles from 5 ms to 320 ms: a peek returns at once while any byte
/// is unread, so it cannot wait for more, and a fixed short pause would let connections that
/// stall mid-preface (up to the connection cap, for the whole header timeout) keep the workers
/// waking hundreds of times a second each. Real clients send the preface in one segment.
pub(super) async fn sniff(stream: &TcpStream) -> Protocol {
    let mut buf = [0u8; PREFACE.len()];
    let mut pause = Duration::from_millis(5);
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(n) => n,
            Err(_) => return Protocol::Http1,
        };
        if n == 0 || buf[..n] != PREFACE[..n] {
            return Protocol::Http1;
        }
        if n == PREFACE.len() {
            return Protocol::Http2;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(320));
    }
}

/// Hyper's HTTP/2 server with the guards' bounds.
pub(super) fn builder() -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .max_concurrent_streams(MAX_STREAMS)
        // The same bound as an HTTP/1 request head: past it, the stream is answered 431.
        .max_header_list_size(MAX_HEAD_BYTES as u32)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESETS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESETS);
    builder
}

/// The streams of one HTTP/2 connection, for its idle watch: how many are being answered,
/// and when one last opened or ended. Frames that are not requests (`PING`,
/// `WINDOW_UPDATE`, `SETTINGS`, half a header block) leave it as it is, so they cannot keep
/// an idle connection open.
#[derive(Debug)]
pub(super) struct Streams {
    open: AtomicU32,
    /// Nanoseconds since `epoch`, plus one, of the last stream opened or ended; 0: none yet.
    last: AtomicU64,
    /// Set when the connection is dropped unfinished: its socket is closed with a reset.
    aborted: AtomicBool,
    epoch: Instant,
}

impl Streams {
    /// Counting from the connect, `epoch`.
    pub(super) fn new(epoch: Instant) -> Self {
        Self {
            open: AtomicU32::new(0),
            last: AtomicU64::new(0),
            aborted: AtomicBool::new(false),
            epoch,
        }
    }

    fn touch(&self) {
        self.last.store(
            self.epoch.elapsed().as_nanos() as u64 + 1,
            Ordering::Relaxed,
        );
    }

    /// Whether a request has reached the service on this connection.
    pub(super) fn any(&self) -> bool {
        self.last.load(Ordering::Relaxed) != 0
    }

    /// Whether a stream is being answered.
    pub(super) fn in_flight(&self) -> bool {
        self.open.load(Ordering::Relaxed) > 0
    }

    pub(super) fn abort(&self) {
        self.aborted.store(true, Ordering::Relaxed);
    }

    /// Whether the connection was dropped unfinished.
    pub(super) fn aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
    }

    /// When the connection will have been without streams for `idle`: `None` while a stream
    /// is open.
    pub(super) fn quiet_until(&self, idle: Duration) -> Option<tokio::time::Instant> {
        if self.open.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let last = Duration::from_nanos(self.last.load(Ordering::Relaxed).saturating_sub(1));
        Some(tokio::time::Instant::from_std(self.epoch + last + idle))
    }
}

impl Tally for Streams {
    fn opened(&self) {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.touch();
    }

    fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.touch();
    }
}
