//! The HTTP/1 server loop with the connection guards of README "Connections": a header read
//! timeout, an idle keep-alive timeout, a cap on concurrent connections and one per peer
//! address, a bound on the request head, then graceful shutdown (stop accepting, let in-flight
//! requests finish, close idle connections).
//!
//! Written here rather than `axum::serve` because axum 0.8's server exposes none of these:
//! it runs hyper without a timer, so a client that sends half a header holds its socket and
//! task forever. Hyper does the HTTP, the header timeout and the head bound; this module adds
//! what hyper lacks for HTTP/1: an idle timeout, a header clock that starts at a request's
//! first byte (see `HeaderTimer`), the per-address cap (see `PerAddress`), and problem
//! documents instead of the empty answers hyper gives the requests it cannot parse (see
//! `Watched`).

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulConnection;
use hyper_util::service::TowerToHyperService;
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use crate::error::{ApiError, Problem};

/// The largest request head (request line and header fields), in bytes: past it, `431`.
/// Hyper's own bound is its read buffer, ~400 KiB, which each of 10,000 connections could
/// make the server hold. This leaves room for the longest target the API takes (a UV union of
/// 100 page names in the query, ~13 KiB) plus tokens and cookies.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// The most header fields a request may carry: past it, `431`. Hyper's default, left as is:
/// raising it makes hyper allocate its header arrays on the heap for every request.
pub const MAX_HEADER_FIELDS: usize = 100;

/// The connection guards (docs/configuration.md).
#[derive(Debug, Clone, Copy)]
pub struct Guards {
    /// A request's header must arrive whole within this.
    pub header_timeout: Duration,
    /// A kept-alive connection with no traffic either way for this long is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Connections one peer address (IPv4 address, IPv6 /64) may hold; a further one is closed.
    pub max_per_address: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains: no new connections,
/// in-flight requests finish, idle connections close. `per_address` is the per-address cap;
/// servers that share it (the binary's workers) share its counts.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    guards: Guards,
    per_address: PerAddress,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cap = guards.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        // A slot first, then accept: past the cap, connections queue in the kernel's backlog
        // instead of each costing a task and a socket here.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: pause instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(held) = per_address.admit(peer.ip()) else {
            // Closed before it costs a task; the slot goes back for the next accept.
            tracing::debug!(%peer, "closing a connection past the per-address cap");
            drop(stream);
            continue;
        };
        let traffic = Arc::new(Traffic::new());
        let io = TokioIo::new(Watched {
            inner: stream,
            traffic: traffic.clone(),
            refusal: None,
        });
        let service = TowerToHyperService::new(app.clone().map_request(
            move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req
            },
        ));
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(HeaderTimer {
                traffic: traffic.clone(),
                timeout: guards.header_timeout,
            })
            .header_read_timeout(guards.header_timeout)
            .max_header_size(MAX_HEAD_BYTES)
            .serve_connection(io, service);
        let watch = Watch {
            traffic,
            idle: guards.idle_timeout,
            stopping: stopping.clone(),
            peer,
        };
        tokio::spawn(async move {
            watch.drive(conn).await;
            drop((slot, held));
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: holding them all means all have ended.
    let _all = slots.acquire_many(cap as u32).await;
    Ok(())
}

/// The cap on connections per peer address: an IPv4 address, or an IPv6 /64 (the unit of the
/// global limiter: a single host is usually handed a whole /64). Peers in the trusted proxies
/// are exempt: they carry many clients' connections. One per server, shared by its worker
/// threads (cloning shares the counts).
///
/// A mutex'd map rather than anything cleverer: it is touched twice per connection, never per
/// request, and holds only the addresses with a connection open.
#[derive(Debug, Clone)]
pub struct PerAddress(Arc<Counts>);

#[derive(Debug)]
struct Counts {
    limit: usize,
    exempt: Vec<IpNet>,
    // std's SipHash: the keys are chosen by whoever connects.
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// At most `limit` connections per address, except from `exempt` networks.
    pub fn new(limit: usize, exempt: Vec<IpNet>) -> Self {
        Self(Arc::new(Counts {
            limit: limit.max(1),
            exempt,
            open: Mutex::new(HashMap::new()),
        }))
    }

    /// A connection from `ip`, counted until the returned guard is dropped; `None` when its
    /// address already holds `limit`. An exempt peer is let in uncounted.
    fn admit(&self, ip: IpAddr) -> Option<AddressHeld> {
        let ip = ip.to_canonical();
        if self.0.exempt.iter().any(|net| net.contains(&ip)) {
            return Some(AddressHeld(None));
        }
        let unit = match ip {
            IpAddr::V4(_) => ip,
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        };
        let mut open = self.0.open.lock().unwrap_or_else(PoisonError::into_inner);
        let n = open.entry(unit).or_insert(0);
        if *n >= self.0.limit {
            return None;
        }
        *n += 1;
        Some(AddressHeld(Some((self.0.clone(), unit))))
    }
}

/// One connection counted against its address (`None`: an exempt peer's, not counted).
#[derive(Debug)]
struct AddressHeld(Option<(Arc<Counts>, IpAddr)>);

impl Drop for AddressHeld {
    fn drop(&mut self) {
        let Some((counts, unit)) = self.0.take() else {
            return;
        };
        let mut open = counts.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = open.get_mut(&unit) {
            *n -= 1;
            if *n == 0 {
                open.remove(&unit);
            }
        }
    }
}

/// What one connection's task watches besides the connection itself.
#[derive(Debug)]
struct Watch {
    traffic: Arc<Traffic>,
    idle: Duration,
    /// Becomes `true` when the server shuts down.
    stopping: watch::Receiver<bool>,
    peer: SocketAddr,
}

impl Watch {
    /// Drives `conn` to its end. No traffic for `idle`, or the server shutting down, starts
    /// hyper's graceful close: a request in flight still gets its response, then the socket
    /// closes.
    ///
    /// One timer per connection, set for `idle` after the last traffic it knew of; when it
    /// fires early (traffic since) it is moved to `idle` after the latest. The close comes
    /// `idle` after the last byte, to within the timer's millisecond.
    async fn drive<C>(mut self, conn: C)
    where
        C: GracefulConnection<Error = hyper::Error>,
    {
        tokio::pin!(conn);
        let idle = tokio::time::sleep_until(self.traffic.quiet_until(self.idle));
        tokio::pin!(idle);
        let mut closing = *self.stopping.borrow();
        if closing {
            conn.as_mut().graceful_shutdown();
        }
        loop {
            tokio::select! {
                done = &mut conn => {
                    if let Err(e) = done {
                        tracing::debug!(error = %e, peer = %self.peer, "connection ended with an error");
                    }
                    return;
                }
                () = &mut idle, if !closing => {
                    let due = self.traffic.quiet_until(self.idle);
                    if due > idle.deadline() {
                        idle.as_mut().reset(due);
                    } else {
                        tracing::debug!(peer = %self.peer, "closing an idle connection");
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
                changed = self.stopping.changed(), if !closing => {
                    if changed.is_err() || *self.stopping.borrow() {
                        closing = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}

/// What went over one connection, shared by its socket, its header timer and its idle watch.
/// Instants are nanoseconds since `epoch`, so they fit atomics.
#[derive(Debug)]
struct Traffic {
    /// The last read or write that moved bytes.
    last: AtomicU64,
    /// When the request being read began, plus one; 0 between requests.
    request_started: AtomicU64,
    epoch: Instant,
}

impl Traffic {
    fn new() -> Self {
        Self {
            last: AtomicU64::new(0),
            // The first request's clock runs from the connect: a client that connects and
            // sends nothing is cut at the header timeout too.
            request_started: AtomicU64::new(1),
            epoch: Instant::now(),
        }
    }

    /// Now, as stored. One clock read (vDSO, no system call) per read or write call: the
    /// price of an idle timeout exact to the millisecond.
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn read(&self) {
        let now = self.now();
        self.last.store(now, Ordering::Relaxed);
        if self.request_started.load(Ordering::Relaxed) == 0 {
            self.request_started.store(now + 1, Ordering::Relaxed);
        }
    }

    /// Whether a request was being read: the first write since its bytes came.
    fn wrote(&self) -> bool {
        self.last.store(self.now(), Ordering::Relaxed);
        let reading = self.request_started.load(Ordering::Relaxed) != 0;
        if reading {
            self.request_started.store(0, Ordering::Relaxed);
        }
        reading
    }

    /// When the connection will have been quiet for `idle`.
    fn quiet_until(&self, idle: Duration) -> tokio::time::Instant {
        let last = Duration::from_nanos(self.last.load(Ordering::Relaxed));
        tokio::time::Instant::from_std(self.epoch + last + idle)
    }

    /// When the request now being read sent its first byte, if one is being read.
    fn request_started(&self) -> Option<Instant> {
        match self.request_started.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.epoch + Duration::from_nanos(n - 1)),
        }
    }
}

/// Hyper's header clock starts when it begins waiting for a request head, which on a
/// kept-alive connection is right after the previous response: it would close every idle
/// connection after the header timeout, making the idle timeout moot. This timer (hyper's
/// HTTP/1 server uses its timer for the header timeout only) lets a header sleep fire only
/// `timeout` after the first byte of a request arrived.
#[derive(Debug, Clone)]
struct HeaderTimer {
    traffic: Arc<Traffic>,
    timeout: Duration,
}

impl hyper::rt::Timer for HeaderTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    // Hyper's deadline is ignored: the clock is the request's first byte (see `HeaderSleep`).
    fn sleep_until(&self, _deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HeaderSleep {
            armed: None,
            timer: self.clone(),
        })
    }
}

/// A header clock that costs nothing until a request's first byte has arrived. Hyper asks for
/// one each time it starts reading a request head — on a kept-alive connection, once per
/// request — and polls it each time reading the head is left pending. Until a byte has come,
/// nothing is armed: the connection is idle (the idle watch's business), and the byte's
/// arrival wakes the connection, and so this poll, through the socket. A timer registered and
/// dropped per request was ~5% of a `GET /healthz`'s instructions (callgrind, issue 19).
#[derive(Debug)]
struct HeaderSleep {
    armed: Option<Pin<Box<tokio::time::Sleep>>>,
    timer: HeaderTimer,
}

impl Future for HeaderSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(started) = self.timer.traffic.request_started() else {
            return Poll::Pending;
        };
        let due = tokio::time::Instant::from_std(started + self.timer.timeout);
        match &mut self.armed {
            Some(sleep) if sleep.deadline() == due => {}
            Some(sleep) => sleep.as_mut().reset(due),
            None => self.armed = Some(Box::pin(tokio::time::sleep_until(due))),
        }
        match &mut self.armed {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

impl hyper::rt::Sleep for HeaderSleep {}

/// A socket that notes when bytes last went either way (hyper has an HTTP/2 keep-alive but no
/// HTTP/1 idle timeout, hence this), and that turns hyper's own refusals into problem
/// documents.
///
/// A request hyper refuses to parse (a malformed request line or header field, bad framing
/// headers, a head over `MAX_HEAD_BYTES` or `MAX_HEADER_FIELDS`) never reaches the service:
/// hyper answers it itself, `400` or `431` (`414` past its own 64 KiB target bound, which the
/// head bound makes unreachable) with an empty body, and closes. Hyper has no hook for those
/// answers, so they are recognised here, as the first write after a request's bytes that is
/// exactly such a head, and a problem document is written instead. The service's own error
/// responses never match: every one has a problem body. Costs a 3-byte compare per response.
#[derive(Debug)]
struct Watched {
    inner: TcpStream,
    traffic: Arc<Traffic>,
    /// A refusal being written in place of hyper's, and how much of it is written.
    refusal: Option<(Vec<u8>, usize)>,
}

impl Watched {
    /// Writes the refusal, then tells hyper its own `claimed` bytes went out.
    fn poll_refusal(
        &mut self,
        cx: &mut Context<'_>,
        claimed: usize,
    ) -> Poll<std::io::Result<usize>> {
        let Some((bytes, written)) = &mut self.refusal else {
            return Poll::Ready(Ok(0));
        };
        while *written < bytes.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))
                }
                Poll::Ready(Ok(n)) => *written += n,
                other => return other,
            }
        }
        Poll::Ready(Ok(claimed))
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

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.traffic.read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.traffic.wrote() && this.refusal.is_none() {
            this.refusal = problem_for(buf).map(|p| (p, 0));
        }
        if this.refusal.is_some() {
            return this.poll_refusal(cx, buf.len());
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if this.traffic.wrote() && this.refusal.is_none() {
            // A refusal has no body: its head is the whole write.
            if let [head] = bufs {
                this.refusal = problem_for(head).map(|p| (p, 0));
            }
        }
        if this.refusal.is_some() {
            return this.poll_refusal(cx, bufs.iter().map(|b| b.len()).sum());
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
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

    #[test]
    fn the_per_address_cap_counts_ipv6_by_its_64_and_frees_on_drop() {
        let cap = PerAddress::new(1, vec!["10.0.0.0/8".parse().unwrap()]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let first = cap.admit(ip("2001:db8:1:2::1")).unwrap();
        assert!(cap.admit(ip("2001:db8:1:2:ffff::9")).is_none(), "same /64");
        assert!(cap.admit(ip("2001:db8:1:3::1")).is_some(), "another /64");
        let v4 = cap.admit(ip("192.0.2.7")).unwrap();
        assert!(
            cap.admit(ip("::ffff:192.0.2.7")).is_none(),
            "mapped IPv4 is IPv4"
        );
        assert!(cap.admit(ip("10.1.1.1")).is_some() && cap.admit(ip("10.1.1.1")).is_some());
        drop((first, v4));
        assert!(cap.admit(ip("2001:db8:1:2::1")).is_some());
        assert!(
            cap.0.open.lock().unwrap().is_empty(),
            "no entry outlives its connections"
        );
    }
}
