//! The clocks of one connection: what went over it ([`Traffic`] for HTTP/1, the streams for
//! HTTP/2), the idle watch that closes it after a quiet spell or at shutdown, and ends a close
//! that does not finish ([`Watch`]), and the HTTP/1 header timer whose clock starts at a
//! request's first byte ([`HeaderTimer`]).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::server::graceful::GracefulConnection;
use tokio::sync::watch;

use super::h2::Streams;
use super::requests::Tally;

/// What a connection's idle clock reads.
#[derive(Debug)]
pub(super) enum Activity {
    /// HTTP/1: bytes either way. Hyper's header timer cuts a head that does not come.
    Socket(Arc<Traffic>),
    /// HTTP/2: streams opened and ended, since `PING`s and other frames flow without any
    /// request; and until the first request, the header timeout from the connect.
    Streams {
        streams: Arc<Streams>,
        first_request_by: Instant,
    },
}

impl Activity {
    /// When the connection will have been quiet for `idle`; `None` while a stream is open.
    fn quiet_until(&self, idle: Duration) -> Option<tokio::time::Instant> {
        match self {
            Self::Socket(traffic) => Some(traffic.quiet_until(idle)),
            Self::Streams { streams, .. } => streams.quiet_until(idle),
        }
    }

    /// Whether a request is being answered (HTTP/2: a stream is open).
    fn in_flight(&self) -> bool {
        match self {
            Self::Socket(traffic) => traffic.in_flight.load(Ordering::Relaxed) > 0,
            Self::Streams { streams, .. } => streams.in_flight(),
        }
    }

    /// Makes the socket's close, when the connection is dropped, a reset.
    fn abort(&self) {
        match self {
            Self::Socket(traffic) => traffic.aborted.store(true, Ordering::Relaxed),
            Self::Streams { streams, .. } => streams.abort(),
        }
    }

    /// When a connection that has had no request yet is cut, if it has had none.
    fn first_request_due(&self) -> Option<tokio::time::Instant> {
        match self {
            Self::Streams {
                streams,
                first_request_by,
            } if !streams.any() => Some(tokio::time::Instant::from_std(*first_request_by)),
            _ => None,
        }
    }
}

/// What one connection's task watches besides the connection itself.
#[derive(Debug)]
pub(super) struct Watch {
    pub(super) activity: Activity,
    pub(super) idle: Duration,
    /// How long a graceful close may take once nothing is in flight.
    pub(super) write: Duration,
    /// Becomes `true` when the server shuts down.
    pub(super) stopping: watch::Receiver<bool>,
    pub(super) peer: SocketAddr,
}

impl Watch {
    /// When the timer should next look: the idle close, or the first request's deadline if
    /// that comes sooner.
    fn next_look(&self) -> tokio::time::Instant {
        let idle = self
            .activity
            .quiet_until(self.idle)
            .unwrap_or_else(|| tokio::time::Instant::now() + self.idle);
        match self.activity.first_request_due() {
            Some(due) => due.min(idle),
            None => idle,
        }
    }

    /// Drives `conn` to its end. No traffic for `idle`, or the server shutting down, starts
    /// hyper's graceful close: a request in flight still gets its response (HTTP/2: `GOAWAY`,
    /// and the open streams finish), then the socket closes. An HTTP/2 connection whose first
    /// request has not come by its header deadline is dropped.
    ///
    /// One timer per connection, set for `idle` after the last traffic it knew of; when it
    /// fires early (traffic since) it is moved to `idle` after the latest. The close comes
    /// `idle` after the last byte, to within the timer's millisecond.
    ///
    /// A graceful close waits for answers that may never go out (a client that reads them a
    /// byte at a time, an HTTP/2 client that does not acknowledge the `GOAWAY`'s `PING`): the
    /// same timer then looks every `write`, and once it has found nothing in flight twice in a
    /// row the connection is dropped, hard. So a close that does not finish ends `write` after
    /// it began, or, if a request was in flight then, `write` to `2 × write` after the last
    /// answer was ready.
    pub(super) async fn drive<C, E>(mut self, conn: C)
    where
        C: GracefulConnection<Error = E>,
        E: std::fmt::Display,
    {
        tokio::pin!(conn);
        let timer = tokio::time::sleep_until(self.next_look());
        tokio::pin!(timer);
        // While closing: whether the last look found nothing in flight.
        let mut closing = None;
        if *self.stopping.borrow() {
            closing = Some(self.close(conn.as_mut(), timer.as_mut()));
        }
        loop {
            tokio::select! {
                done = &mut conn => {
                    if let Err(e) = done {
                        tracing::debug!(error = %e, peer = %self.peer, "connection ended with an error");
                    }
                    return;
                }
                () = &mut timer => {
                    let now = timer.deadline();
                    if let Some(settled) = &mut closing {
                        let in_flight = self.activity.in_flight();
                        if *settled && !in_flight {
                            tracing::debug!(peer = %self.peer, "dropping a connection whose close did not finish");
                            self.activity.abort();
                            return;
                        }
                        *settled = !in_flight;
                        timer.as_mut().reset(now + self.write);
                        continue;
                    }
                    if self.activity.first_request_due().is_some_and(|due| due <= now) {
                        tracing::debug!(peer = %self.peer, "closing an HTTP/2 connection that sent no request in time");
                        return;
                    }
                    let next = self.next_look();
                    if next > now {
                        timer.as_mut().reset(next);
                    } else {
                        tracing::debug!(peer = %self.peer, "closing an idle connection");
                        closing = Some(self.close(conn.as_mut(), timer.as_mut()));
                    }
                }
                changed = self.stopping.changed(), if closing.is_none() => {
                    if changed.is_err() || *self.stopping.borrow() {
                        closing = Some(self.close(conn.as_mut(), timer.as_mut()));
                    }
                }
            }
        }
    }

    /// Starts `conn`'s graceful close, and sets `timer` to look at it `write` later. Whether
    /// nothing is in flight.
    fn close<C: GracefulConnection>(
        &self,
        conn: Pin<&mut C>,
        timer: Pin<&mut tokio::time::Sleep>,
    ) -> bool {
        conn.graceful_shutdown();
        timer.reset(tokio::time::Instant::now() + self.write);
        !self.activity.in_flight()
    }
}

/// What went over one connection, shared by its socket, its header timer, its idle watch and
/// its service (the requests in flight).
/// Instants are nanoseconds since `epoch`, so they fit atomics.
#[derive(Debug)]
pub(super) struct Traffic {
    /// The last read or write that moved bytes.
    last: AtomicU64,
    /// When the request being read began, plus one; 0 between requests.
    request_started: AtomicU64,
    /// Requests being answered: at most one, but for the moment hyper takes the next.
    in_flight: AtomicU32,
    /// Answers made ready so far (wrapping): the socket tells an answer's first write by it.
    answers: AtomicU32,
    /// Set when the connection is dropped unfinished: its socket is closed with a reset.
    aborted: AtomicBool,
    epoch: Instant,
}

impl Traffic {
    /// A connection made at `epoch`.
    pub(super) fn new(epoch: Instant) -> Self {
        Self {
            last: AtomicU64::new(0),
            // The first request's clock runs from the connect: a client that connects and
            // sends nothing is cut at the header timeout too.
            request_started: AtomicU64::new(1),
            in_flight: AtomicU32::new(0),
            answers: AtomicU32::new(0),
            aborted: AtomicBool::new(false),
            epoch,
        }
    }

    /// Now, as stored. One clock read (vDSO, no system call) per read or write call: the
    /// price of an idle timeout exact to the millisecond.
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Bytes came; when, as stored.
    pub(super) fn read(&self) -> u64 {
        let now = self.now();
        self.last.store(now, Ordering::Relaxed);
        if self.request_started.load(Ordering::Relaxed) == 0 {
            self.request_started.store(now + 1, Ordering::Relaxed);
        }
        now
    }

    pub(super) fn wrote(&self) {
        self.last.store(self.now(), Ordering::Relaxed);
    }

    /// Answers made ready so far.
    pub(super) fn answers(&self) -> u32 {
        self.answers.load(Ordering::Relaxed)
    }

    /// An answer's first write: the request it answers is read whole. `buffered` is when the
    /// bytes hyper holds beyond it came (as [`Traffic::read`] gave it), if it holds any: the
    /// next request's head began then, and its header clock runs from then; else there is no
    /// next request yet, and its clock starts at its first byte.
    pub(super) fn answering(&self, buffered: Option<u64>) {
        let started = buffered.map_or(0, |at| at + 1);
        self.request_started.store(started, Ordering::Relaxed);
    }

    /// Whether the connection was dropped unfinished.
    pub(super) fn aborted(&self) -> bool {
        self.aborted.load(Ordering::Relaxed)
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

impl Tally for Traffic {
    fn opened(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    fn closed(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.answers.fetch_add(1, Ordering::Relaxed);
    }
}

/// Hyper's header clock starts when it begins waiting for a request head, which on a
/// kept-alive connection is right after the previous response: it would close every idle
/// connection after the header timeout, making the idle timeout moot. This timer (hyper's
/// HTTP/1 server uses its timer for the header timeout only) lets a header sleep fire only
/// `timeout` after the first byte of a request arrived.
#[derive(Debug, Clone)]
pub(super) struct HeaderTimer {
    pub(super) traffic: Arc<Traffic>,
    pub(super) timeout: Duration,
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
/// dropped per request was ~5% of a `GET /healthz`'s instructions (callgrind).
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
