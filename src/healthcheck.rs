//! `redis-gateway healthcheck`: asks a running gateway's `/healthz` and exits 0 on a 200, for
//! the container image's `HEALTHCHECK` (the slim image has no curl).
//!
//! A fixed `GET` over a plain socket, hand-written: it is the one request the binary ever sends,
//! and an HTTP client crate would add more to the image than this whole module.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest the whole check may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// `Ok` when the gateway listening on `listen` answers `/healthz` with 200.
pub async fn check(listen: SocketAddr) -> Result<(), String> {
    let addr = reachable(listen);
    tokio::time::timeout(TIMEOUT, ask(addr))
        .await
        .map_err(|_| format!("no answer from {addr} within {TIMEOUT:?}"))?
}

/// A wildcard listen address is reached on loopback.
fn reachable(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => (Ipv4Addr::LOCALHOST, listen.port()).into(),
        IpAddr::V6(ip) if ip.is_unspecified() => (Ipv6Addr::LOCALHOST, listen.port()).into(),
        _ => listen,
    }
}

async fn ask(addr: SocketAddr) -> Result<(), String> {
    let mut sock = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    sock.write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot send to {addr}: {e}"))?;
    let mut head = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while !head.contains(&b'\n') {
        let n = sock
            .read(&mut buf)
            .await
            .map_err(|e| format!("cannot read from {addr}: {e}"))?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let status_line = String::from_utf8_lossy(&head);
    let status_line = status_line.lines().next().unwrap_or_default();
    match status_line.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        _ => Err(format!("{addr} answered {status_line:?}")),
    }
}
