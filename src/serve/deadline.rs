//! The write deadline of a connection's socket ([`WriteClock`]), the hard close that ends a
//! connection whose answers are not read ([`Abort`]), and the socket option that keeps the
//! kernel from queueing much for such a connection ([`bound_unsent`]).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Bytes the kernel may hold unsent for one connection, past those in flight
/// (`TCP_NOTSENT_LOWAT`). Linux's default is no bound but the send buffer, which it grows to
/// 4 MiB for a connection that does not read: 377 MiB for 100 of them. It is also the grain of
/// the write clock: a socket takes more only once its unsent bytes fall under half of this, so
/// a client must read some 8 KiB per write timeout to count as reading. 16 KiB is plenty for
/// answers of this API, whose largest are some hundreds of KiB: a socket of a client that
/// reads asks for more every 8 KiB sent, a system call per 8 KiB or more of a large answer.
pub(super) const MAX_UNSENT: u32 = 16 * 1024;

/// Bounds the unsent bytes of every connection `listener` takes from now on: Linux copies the
/// option from the listening socket into each connection when its handshake completes, so
/// this costs no system call per connection, but a connection already waiting to be accepted
/// keeps the kernel's default: set it as soon as the socket listens. Where the kernel lacks
/// the option, the write timeout alone bounds what a connection that does not read holds.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn bound_unsent<L: std::os::fd::AsFd>(listener: &L) {
    if let Err(e) = socket2::SockRef::from(listener).set_tcp_notsent_lowat(MAX_UNSENT) {
        tracing::warn!(error = %e, "TCP_NOTSENT_LOWAT not set: the write timeout alone bounds what a connection that does not read holds");
    }
}

/// See the Linux version: elsewhere the write timeout alone bounds it.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn bound_unsent<L>(_listener: &L) {}

/// A socket that can be closed hard: with a reset, dropping what it holds unsent, instead of a
/// FIN that would wait behind those bytes (for a client that does not read, until the kernel
/// gives up on it, minutes later, holding them all the while).
pub(super) trait Abort {
    /// Makes the close that comes with the socket's drop a reset.
    fn abort(&self);
}

impl Abort for TcpStream {
    fn abort(&self) {
        // A zero linger does not block the close: the kernel resets the connection at once.
        let _ = self.set_zero_linger();
    }
}

impl<S: Abort> Abort for tokio_rustls::server::TlsStream<S> {
    fn abort(&self) {
        self.get_ref().0.abort();
    }
}

/// Closes a connection whose socket takes nothing for `timeout`: each write, flush or shutdown
/// of the socket goes through [`WriteClock::check`], and one that stays pending that long, with
/// no byte taken in between, becomes a `TimedOut` error, which ends hyper's connection.
///
/// Costs nothing while the socket takes what it is given; a stall reads the clock once and
/// sets a timer (allocated at the connection's first stall, then reused).
#[derive(Debug)]
pub(super) struct WriteClock {
    timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    /// A write is pending since the timer was last set.
    stalled: bool,
    expired: bool,
}

impl WriteClock {
    pub(super) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            sleep: None,
            stalled: false,
            expired: false,
        }
    }

    /// `polled`, unless the socket has been stalled for the timeout: then the connection's
    /// error. `cx` is woken when the timeout passes.
    pub(super) fn check<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if polled.is_ready() {
            self.stalled = false;
            return polled;
        }
        if !self.stalled {
            self.stalled = true;
            let due = Instant::now() + self.timeout;
            match &mut self.sleep {
                Some(sleep) => sleep.as_mut().reset(due),
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(due))),
            }
        }
        let Some(sleep) = &mut self.sleep else {
            return Poll::Pending;
        };
        ready!(sleep.as_mut().poll(cx));
        self.expired = true;
        Poll::Ready(Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the client read nothing of its answers for the write timeout",
        )))
    }

    /// Whether the clock has run out: the socket is to be closed hard.
    pub(super) fn expired(&self) -> bool {
        self.expired
    }
}
