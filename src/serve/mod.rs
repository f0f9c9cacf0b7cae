//! The HTTP/1 server loop with the connection guards of docs/operations.md "Connections": a header
//! read timeout, an idle keep-alive timeout, a cap on concurrent connections and one per peer
//! address, a bound on the request head, then graceful shutdown (stop accepting, let in-flight
//! requests finish, close idle connections).
//!
//! Written here rather than `axum::serve` because axum 0.8's server exposes none of these:
//! it runs hyper without a timer, so a client that sends half a header holds its socket and
//! task forever. Hyper does the HTTP, the header timeout and the head bound; this module adds
//! what hyper lacks for HTTP/1: an idle timeout, a header clock that starts at a request's
//! first byte (see `HeaderTimer`), the per-address cap (see `PerAddress`), and problem
//! documents instead of the empty answers hyper gives the requests it cannot parse (see
//! `Watched`).//!
//! Here: the accept loop; `per_address.rs`: the per-address cap; `clock.rs`: a connection's
//! traffic, idle watch and header timer; `socket.rs`: its socket and hyper's refusals.

mod clock;
mod per_address;
mod socket;

pub use per_address::PerAddress;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use clock::{HeaderTimer, Traffic, Watch};
use socket::Watched;

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
        let io = TokioIo::new(Watched::new(stream, traffic.clone()));
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
