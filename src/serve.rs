//! The HTTP/1 server loop with the connection guards of API.md "Clients and abuse": a header
//! read timeout, an idle keep-alive timeout and a cap on concurrent connections, then graceful
//! shutdown (stop accepting, let in-flight requests finish, close idle connections).
//!
//! Written here rather than `axum::serve` because axum 0.8's server exposes none of these:
//! it runs hyper without a timer, so a client that sends half a header holds its socket and
//! task forever. Hyper does the HTTP and the header timeout; this module adds what hyper lacks
//! for HTTP/1: an idle timeout, and a header clock that starts at a request's first byte (see
//! `HeaderTimer`).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulConnection;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

/// The connection guards (API.md "Configuration").
#[derive(Debug, Clone, Copy)]
pub struct Guards {
    /// A request's header must arrive whole within this.
    pub header_timeout: Duration,
    /// A kept-alive connection with no traffic either way for this long is closed.
    pub idle_timeout: Duration,
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains: no new connections,
/// in-flight requests finish, idle connections close.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    guards: Guards,
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
        let traffic = Arc::new(Traffic::new());
        let io = TokioIo::new(Watched {
            inner: stream,
            traffic: traffic.clone(),
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
            .serve_connection(io, service);
        let watch = Watch {
            traffic,
            idle: guards.idle_timeout,
            stopping: stopping.clone(),
            peer,
        };
        tokio::spawn(async move {
            watch.drive(conn).await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: holding them all means all have ended.
    let _all = slots.acquire_many(cap as u32).await;
    Ok(())
}

/// How many quiet ticks make a connection idle: the idle timeout is honoured to within a
/// quarter of itself, for one relaxed store per read or write.
const IDLE_TICKS: u32 = 4;

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
    /// Drives `conn` to its end. Idle for `idle`, or the server shutting down, starts hyper's
    /// graceful close: a request in flight still gets its response, then the socket closes.
    async fn drive<C>(mut self, conn: C)
    where
        C: GracefulConnection<Error = hyper::Error>,
    {
        tokio::pin!(conn);
        let tick = self.idle / IDLE_TICKS;
        let mut quiet = 0;
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
                () = tokio::time::sleep(tick), if !closing => {
                    quiet = if self.traffic.active.swap(false, Ordering::Relaxed) { 0 } else { quiet + 1 };
                    if quiet >= IDLE_TICKS {
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
#[derive(Debug)]
struct Traffic {
    /// Set by every read or write; cleared by each idle tick.
    active: AtomicBool,
    /// When the request being read began (ms since `epoch`, plus one), 0 between requests.
    request_started: AtomicU64,
    epoch: Instant,
}

impl Traffic {
    fn new() -> Self {
        Self {
            active: AtomicBool::new(true),
            // The first request's clock runs from the connect: a client that connects and
            // sends nothing is cut at the header timeout too.
            request_started: AtomicU64::new(1),
            epoch: Instant::now(),
        }
    }

    fn read(&self) {
        self.active.store(true, Ordering::Relaxed);
        if self.request_started.load(Ordering::Relaxed) == 0 {
            let since = self.epoch.elapsed().as_millis() as u64;
            self.request_started.store(since + 1, Ordering::Relaxed);
        }
    }

    fn wrote(&self) {
        self.active.store(true, Ordering::Relaxed);
        self.request_started.store(0, Ordering::Relaxed);
    }

    /// When the request now being read sent its first byte, if one is being read.
    fn request_started(&self) -> Option<Instant> {
        match self.request_started.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(self.epoch + Duration::from_millis(ms - 1)),
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

/// A socket that notes whether any byte went either way since the idle watch last looked.
/// Hyper has an HTTP/2 keep-alive but no HTTP/1 idle timeout, hence this.
#[derive(Debug)]
struct Watched {
    inner: TcpStream,
    traffic: Arc<Traffic>,
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
        self.traffic.wrote();
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.traffic.wrote();
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
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
