//! The server loop, HTTP/1.1 and HTTP/2 (h2c with prior knowledge) on one port, with the
//! connection guards of docs/operations.md "Connections": a header read timeout, an idle
//! keep-alive timeout, a write timeout, a cap on concurrent connections and one per peer
//! address, bounds on the request head, on what a connection holds unread and on an HTTP/2
//! connection's streams, then graceful shutdown (stop accepting, let in-flight requests
//! finish, close idle connections).
//!
//! Written here rather than `axum::serve` because axum 0.8's server exposes none of these:
//! it runs hyper without a timer, so a client that sends half a header holds its socket and
//! task forever. Hyper does the HTTP, the header timeout and the head bound; this module adds
//! what hyper lacks for HTTP/1: an idle timeout, a header clock that starts at a request's
//! first byte (see `HeaderTimer`), the per-address cap (see `PerAddress`), and problem
//! documents instead of the empty answers hyper gives the requests it cannot parse (see
//! `Watched`). HTTP/2 has hyper's own bounds (streams, header list, resets) and an idle clock
//! of its own, read from its streams (see `h2.rs`). Both have a write timeout, which hyper
//! has not at all (see `WriteClock`).
//!
//! Here: the accept loop and each connection's start; `per_address.rs`: the per-address cap;
//! `clock.rs`: a connection's traffic, idle watch and header timer; `requests.rs`: its
//! requests in flight; `deadline.rs`: its write clock and hard close; `socket.rs`: an HTTP/1
//! socket and hyper's refusals; `h2.rs`: telling HTTP/2 from HTTP/1, and HTTP/2's settings;
//! `frames.rs`: an HTTP/2 socket, its control-frame budget and its answers' progress;
//! `tls.rs`: HTTPS, its certificate and its reloading.

mod clock;
mod deadline;
mod frames;
mod h2;
mod per_address;
mod requests;
mod socket;
mod tls;

pub use deadline::bound_unsent;
pub use h2::MAX_STREAMS;
pub use per_address::PerAddress;
pub use tls::Tls;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use clock::{Activity, HeaderTimer, Traffic, Watch};
use deadline::{Abort, WriteClock};
use frames::Framed;
use h2::{Protocol, Streams};
use requests::Counted;
use socket::Watched;

/// The largest request head (request line and header fields), in bytes: past it, `431`.
/// Hyper's own bound is its read buffer, ~400 KiB, which each of 10,000 connections could
/// make the server hold. This leaves room for the longest target the API takes (a UV union of
/// 100 page names in the query, ~13 KiB) plus tokens and cookies.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// The most bytes hyper buffers for one HTTP/1 connection, either way: its read buffer, which
/// must hold a whole head (hence twice the head bound), and its write buffer, where answers
/// to pipelined requests wait for a socket that takes no more (hyper's default, ~400 KiB,
/// for each of 10,000 connections).
const MAX_BUF_BYTES: usize = 2 * MAX_HEAD_BYTES;

/// The most header fields a request may carry: past it, `431`. Hyper's default, left as is:
/// raising it makes hyper allocate its header arrays on the heap for every request.
pub const MAX_HEADER_FIELDS: usize = 100;

pub use crate::config::Guards;

/// Serves `app` on `listener` until `shutdown` resolves, then drains: no new connections,
/// in-flight requests finish, idle connections close. `per_address` is the per-address cap;
/// servers that share it (the binary's workers) share its counts. With `tls`, every
/// connection is HTTPS.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    guards: Guards,
    per_address: PerAddress,
    tls: Option<Tls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let cap = guards.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(cap));
    let (stop, stopping) = watch::channel(false);
    // Again, for a listener bound by another caller than the binary's `main`.
    bound_unsent(&listener);
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
        let conn = Connection {
            app: WithPeer {
                app: app.clone(),
                peer: ConnectInfo(peer),
            },
            guards,
            stopping: stopping.clone(),
            connected: Instant::now(),
        };
        let tls = tls.as_ref().map(Tls::acceptor);
        tokio::spawn(async move {
            // Each stage's future is boxed when it begins. A task keeps the size of its largest
            // stage for the connection's life, all of it written at the spawn: inline, that
            // was TLS with HTTP/2 for every connection (11 KiB resident per connection before
            // its first request, 2 KiB boxed).
            match tls {
                None => conn.serve(stream).await,
                Some(tls) => {
                    let tls = Box::pin(conn.serve_tls(stream, tls));
                    tls.await;
                }
            }
            drop((slot, held));
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: holding them all means all have ended.
    let _all = slots.acquire_many(cap as u32).await;
    Ok(())
}

/// One accepted connection, before it knows its protocol.
struct Connection {
    app: WithPeer,
    guards: Guards,
    stopping: watch::Receiver<bool>,
    connected: Instant,
}

impl Connection {
    async fn serve(mut self, stream: TcpStream) {
        // Each stage boxed (see the spawn), the sniff with its timer too, so it is freed when
        // it ends; each in a `let` of its own, since a temporary in the statement of an
        // `.await` is kept in the task across it, moved out or not.
        let sniffing = Box::pin(self.in_time(h2::sniff(&stream)));
        let sniffed = sniffing.await;
        match sniffed {
            Some(Protocol::Http1) => {
                let http1 = Box::pin(self.http1(stream));
                http1.await;
            }
            Some(Protocol::Http2) => {
                let http2 = Box::pin(self.http2(stream));
                http2.await;
            }
            None => {}
        }
    }

    /// HTTPS: the handshake within the header timeout (it holds the connection's slots like
    /// any connection), then the protocol ALPN chose, HTTP/1.1 when the client named none.
    async fn serve_tls(mut self, stream: TcpStream, tls: tokio_rustls::TlsAcceptor) {
        let accepting = Box::pin(self.in_time(tls.accept(stream)));
        let stream = match accepting.await {
            Some(Ok(stream)) => stream,
            Some(Err(e)) => {
                tracing::debug!(error = %e, peer = %self.app.peer.0, "TLS handshake failed");
                return;
            }
            None => return,
        };
        if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
            let http2 = Box::pin(self.http2(stream));
            http2.await;
        } else {
            let http1 = Box::pin(self.http1(stream));
            http1.await;
        }
    }

    /// `step`, unless the connection's header deadline (from the connect) or the server's
    /// shutdown comes first.
    async fn in_time<T>(&mut self, step: impl Future<Output = T>) -> Option<T> {
        let due = tokio::time::Instant::from_std(self.connected + self.guards.header_timeout);
        tokio::select! {
            biased;
            done = step => Some(done),
            () = tokio::time::sleep_until(due) => None,
            _ = self.stopping.wait_for(|stopping| *stopping) => None,
        }
    }

    async fn http1<S>(self, io: S)
    where
        S: AsyncRead + AsyncWrite + Abort + Unpin + Send + 'static,
    {
        let traffic = Arc::new(Traffic::new(self.connected));
        let clock = WriteClock::new(self.guards.write_timeout);
        let io = TokioIo::new(Watched::new(io, traffic.clone(), clock));
        let service = Counted {
            inner: self.app.clone(),
            tally: traffic.clone(),
        };
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(HeaderTimer {
                traffic: traffic.clone(),
                timeout: self.guards.header_timeout,
            })
            .header_read_timeout(self.guards.header_timeout)
            .max_header_size(MAX_HEAD_BYTES)
            .max_buf_size(MAX_BUF_BYTES)
            .serve_connection(io, TowerToHyperService::new(service));
        self.watch(Activity::Socket(traffic)).drive(conn).await;
    }

    async fn http2<S>(self, io: S)
    where
        S: AsyncRead + AsyncWrite + Abort + Unpin + Send + 'static,
    {
        let streams = Arc::new(Streams::new(self.connected));
        let service = Counted {
            inner: self.app.clone(),
            tally: streams.clone(),
        };
        let io = Framed::new(io, streams.clone(), self.guards.write_timeout);
        let conn =
            h2::builder().serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
        let first_request_by = self.connected + self.guards.header_timeout;
        self.watch(Activity::Streams {
            streams,
            first_request_by,
        })
        .drive(conn)
        .await;
    }

    fn watch(self, activity: Activity) -> Watch {
        Watch {
            activity,
            idle: self.guards.idle_timeout,
            write: self.guards.write_timeout,
            stopping: self.stopping,
            peer: self.app.peer.0,
        }
    }
}

/// The app, each request told its peer's address (`ConnectInfo`, as `axum::serve` does).
#[derive(Debug, Clone)]
struct WithPeer {
    app: Router,
    peer: ConnectInfo<SocketAddr>,
}

impl tower::Service<Request<Incoming>> for WithPeer {
    type Response = <Router as tower::Service<Request<Incoming>>>::Response;
    type Error = Infallible;
    type Future = <Router as tower::Service<Request<Incoming>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower::Service::<Request<Incoming>>::poll_ready(&mut self.app, cx)
    }

    fn call(&mut self, mut req: Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(self.peer);
        self.app.call(req)
    }
}
