//! Connection guards (API.md "Clients and abuse"): slow headers, idle keep-alive connections
//! and the connection cap, each tried with a real socket.

mod common;

use std::time::Duration;

use common::{settings, Backend, Gateway};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const REQUEST: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n";

async fn gateway(header_ms: u64, idle_ms: u64, max: usize) -> Gateway {
    let mut s = settings(Backend::Memory);
    s.connections.header_timeout = Duration::from_millis(header_ms);
    s.connections.idle_timeout = Duration::from_millis(idle_ms);
    s.connections.max_connections = max;
    Gateway::with_settings(s).await
}

/// Reads until the server closes the socket; `None` if it is still open after 5 s.
async fn closed_by_server(sock: &mut TcpStream) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads one response head (up to the blank line), or `None` if nothing arrives in `wait`.
async fn response_head(sock: &mut TcpStream, wait: Duration) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(wait, sock.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn a_client_sending_half_a_header_is_cut_off() {
    let gw = gateway(300, 60_000, 100).await;
    let mut slow = TcpStream::connect(gw.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: gw\r\n")
        .await
        .unwrap();
    let got = closed_by_server(&mut slow)
        .await
        .expect("the server closes a connection whose header never completes");
    assert!(
        !String::from_utf8_lossy(&got).contains("200 OK"),
        "no answer to half a request"
    );

    // Nor may a client connect and send nothing.
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await.is_some());

    // A client that completes its header in time is served on the same settings.
    let mut ok = TcpStream::connect(gw.addr).await.unwrap();
    ok.write_all(REQUEST).await.unwrap();
    let head = response_head(&mut ok, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed() {
    let gw = gateway(10_000, 400, 100).await;
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    sock.write_all(REQUEST).await.unwrap();
    let head = response_head(&mut sock, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        closed_by_server(&mut sock).await.is_some(),
        "an idle connection is closed after GATEWAY_IDLE_TIMEOUT_MS"
    );
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let gw = gateway(10_000, 60_000, 2).await;
    let mut first = TcpStream::connect(gw.addr).await.unwrap();
    first.write_all(REQUEST).await.unwrap();
    assert!(response_head(&mut first, Duration::from_secs(10))
        .await
        .is_some());
    let second = TcpStream::connect(gw.addr).await.unwrap();
    // Give the server the chance to take the second connection into its last slot.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut third = TcpStream::connect(gw.addr).await.unwrap();
    third.write_all(REQUEST).await.unwrap();
    assert!(
        response_head(&mut third, Duration::from_millis(500))
            .await
            .is_none(),
        "a third connection is not served while two hold the slots"
    );
    drop(first);
    drop(second);
    let head = response_head(&mut third, Duration::from_secs(10))
        .await
        .expect("served once a slot is free");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

/// The header clock starts at a request's first byte: a kept-alive connection waiting for its
/// next request is governed by the idle timeout, not cut at the (shorter) header timeout.
#[tokio::test]
async fn the_header_timeout_does_not_cut_idle_connections() {
    let gw = gateway(200, 60_000, 100).await;
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    for _ in 0..2 {
        sock.write_all(REQUEST).await.unwrap();
        let head = response_head(&mut sock, Duration::from_secs(10))
            .await
            .unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        // Idle for several header timeouts, then the next request on the same connection.
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    // And a request started but never finished is still cut at the header timeout.
    sock.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    assert!(closed_by_server(&mut sock).await.is_some());
}

/// `--help` shows each setting's environment variable, but never the value of a secret one.
#[test]
fn help_hides_secret_values() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_redis-gateway"))
        .arg("--help")
        .env("REDIS_URL", "redis://:hunter2-redis@127.0.0.1:6379")
        .env("DATABASE_URL", "postgres://u:hunter2-pg@127.0.0.1/db")
        .env("GATEWAY_ADMIN_TOKEN", "hunter2-admin")
        .env("GATEWAY_JWT_SECRET", "hunter2-jwt-hunter2-jwt-hunter2-jwt")
        .env("GATEWAY_KEY_PREFIX", "visible-prefix:")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("REDIS_URL"), "{help}");
    assert!(help.contains("visible-prefix:"), "other values are shown");
    assert!(!help.contains("hunter2"), "{help}");
}
