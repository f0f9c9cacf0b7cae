//! Connection guards (docs/api.md "Clients and abuse"): slow headers (pipelined ones too), idle
//! keep-alive connections, the connection caps, stalled bodies, protocol-level refusals, clients
//! that do not read their answers and a shutdown that waits on them, each tried with a real
//! socket.

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::poll::{eventually, until};
use common::{closed_by_server, server_ends, settings, Backend, Gateway, ESTABLISHED};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const REQUEST: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n";

async fn gateway(header_ms: u64, idle_ms: u64, max: usize) -> Gateway {
    let mut s = settings(Backend::Memory);
    s.connections.header_timeout = Duration::from_millis(header_ms);
    s.connections.idle_timeout = Duration::from_millis(idle_ms);
    s.connections.max_connections = max;
    Gateway::with_settings(s).await
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

/// Sends `requests` requests on a new connection, `pause` apart, and returns how long after
/// the last response the server closed it.
async fn quiet_before_close(gw: &Gateway, requests: u32, pause: Duration) -> Duration {
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    for i in 0..requests {
        if i > 0 {
            // Real time: the gap between requests is measured against the gateway's real timers.
            tokio::time::sleep(pause).await;
        }
        sock.write_all(REQUEST).await.unwrap();
        let head = response_head(&mut sock, Duration::from_secs(10))
            .await
            .expect("open until the idle timeout");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    }
    let answered = Instant::now();
    assert!(closed_by_server(&mut sock).await.is_some());
    answered.elapsed()
}

/// The close comes `idle` after the last traffic, not up to a quarter later; traffic moves
/// the deadline (the second connection is closed `idle` after its second response).
#[tokio::test]
async fn an_idle_connection_closes_at_the_idle_timeout() {
    let idle = Duration::from_millis(1_000);
    let gw = gateway(10_000, idle.as_millis() as u64, 100).await;
    let (once, twice) = tokio::join!(
        quiet_before_close(&gw, 1, Duration::ZERO),
        quiet_before_close(&gw, 2, idle / 2),
    );
    for quiet in [once, twice] {
        // The clock here starts once a response has arrived, a little after it was written.
        assert!(
            quiet + Duration::from_millis(10) >= idle,
            "closed after {quiet:?}, before the idle timeout"
        );
        assert!(
            quiet < idle.mul_f64(1.15),
            "closed after {quiet:?}: the idle timeout is {idle:?}"
        );
    }
}

/// A connection from `ip` (any of 127.0.0.0/8 reaches a loopback listener on Linux).
async fn connect_from(ip: &str, to: SocketAddr) -> TcpStream {
    let sock = TcpSocket::new_v4().unwrap();
    sock.bind(format!("{ip}:0").parse().unwrap()).unwrap();
    sock.connect(to).await.unwrap()
}

/// A connection from `ip` that gets a `200` for a request.
async fn served_from(ip: &str, to: SocketAddr) -> TcpStream {
    let mut sock = connect_from(ip, to).await;
    sock.write_all(REQUEST).await.unwrap();
    let head = response_head(&mut sock, Duration::from_secs(10))
        .await
        .unwrap_or_else(|| panic!("a connection from {ip} is served"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    sock
}

/// One address cannot hold every slot: past `GATEWAY_MAX_CONNECTIONS_PER_ADDRESS` its new
/// connections are closed at once, while other addresses — and trusted proxies, whatever
/// their count — are served. (The harness's own client talks from 127.0.0.1, so the capped
/// address here is 127.0.0.2.)
#[tokio::test]
async fn one_address_cannot_take_every_connection() {
    let mut s = settings(Backend::Memory);
    s.connections.max_per_address = 2;
    s.trusted_proxies = vec!["127.0.0.3/32".parse().unwrap()];
    let gw = Gateway::with_settings(s).await;
    let first = served_from("127.0.0.2", gw.addr).await;
    let _second = served_from("127.0.0.2", gw.addr).await;

    let mut third = connect_from("127.0.0.2", gw.addr).await;
    // The server may have closed it before this write: that is the point.
    let _ = third.write_all(REQUEST).await;
    let got = closed_by_server(&mut third)
        .await
        .expect("a connection past the per-address cap is closed at once");
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));

    let _other = served_from("127.0.0.4", gw.addr).await;
    let _proxied: Vec<TcpStream> =
        futures::future::join_all((0..3).map(|_| served_from("127.0.0.3", gw.addr))).await;

    // A connection that ends gives its address's place back.
    drop(first);
    let freed = "the closed connection's place is freed";
    let head = eventually(Duration::from_secs(20), freed, || async {
        let mut again = connect_from("127.0.0.2", gw.addr).await;
        let _ = again.write_all(REQUEST).await;
        response_head(&mut again, Duration::from_secs(2)).await
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

/// Reads one whole response: its head, and the body its `content-length` announces.
async fn response(sock: &mut TcpStream) -> (String, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!(
                "no whole response head ({other:?}): {}",
                String::from_utf8_lossy(&got)
            ),
        }
    };
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    while got.len() < end + length {
        match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => panic!("the body broke off ({other:?}): {head}"),
        }
    }
    (head, got[end..end + length].to_vec())
}

/// Sends `raw` on a new connection and reads the answer, which must be a problem document
/// with `status` and `code`. Returns the answer's head (lower-cased).
async fn refused(gw: &Gateway, raw: &[u8], status: u16, code: &str) -> String {
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    // Hyper may answer and close before reading all of an oversized head.
    let _ = sock.write_all(raw).await;
    let (head, body) = response(&mut sock).await;
    let what = String::from_utf8_lossy(&raw[..raw.len().min(60)]).into_owned();
    assert!(
        head.starts_with(&format!("http/1.1 {status} ")),
        "{what}: {head}"
    );
    assert!(
        head.contains("\r\ncontent-type: application/problem+json\r\n"),
        "{what}: {head}"
    );
    let problem: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&body)));
    assert_eq!(problem["status"], status, "{what}: {problem}");
    assert_eq!(problem["code"], code, "{what}: {problem}");
    head
}

/// Requests refused before they reach a route — by hyper's parser or the head limits — get
/// problem documents like every other error, not hyper's empty answers.
#[tokio::test]
async fn protocol_refusals_are_problem_documents() {
    let gw = gateway(10_000, 60_000, 100).await;

    let mut many = b"GET /healthz HTTP/1.1\r\nHost: gw\r\n".to_vec();
    for i in 0..120 {
        many.extend_from_slice(format!("X-Field-{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let head = refused(&gw, &many, 431, "headers_too_large").await;
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");

    // Just over the 32 KiB head limit, sent whole, so the server reads all of it.
    let big = format!(
        "GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Big: {}\r\n\r\n",
        "a".repeat(32 * 1024)
    );
    refused(&gw, big.as_bytes(), 431, "headers_too_large").await;

    let long = format!(
        "GET /v1/uv/home?date={} HTTP/1.1\r\nHost: gw\r\n\r\n",
        "1".repeat(17 * 1024)
    );
    refused(&gw, long.as_bytes(), 414, "uri_too_long").await;

    refused(
        &gw,
        b"GET /healthz HTTP/1.1\r\nHost: gw\r\nNot a header\r\n\r\n",
        400,
        "invalid_argument",
    )
    .await;
    refused(
        &gw,
        b"POST /v1/uv/home HTTP/1.1\r\nHost: gw\r\nContent-Length: ten\r\n\r\n",
        400,
        "invalid_argument",
    )
    .await;
    // Broken chunked framing surfaces as a body error to the route reading the body.
    refused(
        &gw,
        b"POST /v1/uv/home HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n\
          Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        400,
        "invalid_argument",
    )
    .await;

    // Within the limits, a long target and a big head are served.
    let fine = format!(
        "GET /healthz?pad={} HTTP/1.1\r\nHost: gw\r\nX-Big: {}\r\n\r\n",
        "p".repeat(15 * 1024),
        "a".repeat(15 * 1024)
    );
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    sock.write_all(fine.as_bytes()).await.unwrap();
    let (head, _) = response(&mut sock).await;
    assert!(head.starts_with("http/1.1 200 "), "{head}");
}

/// A body that stops arriving is the client's fault: `408 request_timeout` once the request
/// timeout passes, and the connection is closed (the rest of the body must not be read as a
/// request), where it used to be a `503 backend_unavailable`.
#[tokio::test]
async fn a_stalled_body_is_a_408() {
    let mut s = settings(Backend::Memory);
    s.request_timeout = Duration::from_millis(300);
    let gw = Gateway::with_settings(s).await;
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    sock.write_all(
        b"POST /v1/uv/home HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n\
          Content-Length: 40\r\n\r\n{\"visitor\": ",
    )
    .await
    .unwrap();
    let (head, body) = response(&mut sock).await;
    assert!(head.starts_with("http/1.1 408 "), "{head}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
    assert!(
        head.contains("\r\ncontent-type: application/problem+json\r\n"),
        "{head}"
    );
    let problem: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["code"], "request_timeout", "{problem}");
    assert!(closed_by_server(&mut sock).await.is_some());
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
    // Real time: for the gateway to take the second connection from a real socket; nothing shows it.
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
        // Real time: idle across several of the gateway's real header timeouts.
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    // And a request started but never finished is still cut at the header timeout.
    sock.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    assert!(closed_by_server(&mut sock).await.is_some());
}

/// A partial second request head sent in the same segment as the first request (pipelined) is
/// held to the header timeout, counted from its arrival, like any other head: the first request is
/// answered, and the connection is closed long before the idle timeout.
#[tokio::test]
async fn a_partial_pipelined_head_is_cut_at_the_header_timeout() {
    let idle = Duration::from_secs(30);
    let gw = gateway(1_000, idle.as_millis() as u64, 100).await;
    let mut sock = TcpStream::connect(gw.addr).await.unwrap();
    let mut both = REQUEST.to_vec();
    both.extend_from_slice(b"GET /healthz HTTP/1.1\r\nHo");
    sock.write_all(&both).await.unwrap();
    let sent = Instant::now();
    let (head, _) = response(&mut sock).await;
    assert!(head.starts_with("http/1.1 200 "), "{head}");
    // The bound is the idle timeout, far from the header timeout: only a connection held to the
    // idle timeout fails it.
    let mut rest = Vec::new();
    let closed =
        tokio::time::timeout(idle - Duration::from_secs(10), sock.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "still open {:?} after the half head: held to the idle timeout",
        sent.elapsed()
    );
    assert!(
        !String::from_utf8_lossy(&rest).contains("200 OK"),
        "no answer to half a request"
    );
}

/// A gateway whose connections are closed when their answers are not read for `write`.
async fn with_write_timeout(write: Duration) -> Gateway {
    let mut s = settings(Backend::Memory);
    s.connections.write_timeout = write;
    Gateway::with_settings(s).await
}

/// Opens `n` connections that each send `requests` and never read, and returns once the
/// server has closed them all (a hang guard fails the test if it does not within ten write
/// timeouts), after checking that each held at most `most` bytes queued in the kernel
/// meanwhile, that none holds any once closed, and that each client sees its end.
async fn never_reading(n: usize, requests: &[u8], most: u64) {
    let write = Duration::from_secs(1);
    let gw = with_write_timeout(write).await;
    let mut socks = Vec::new();
    let mut ports = HashSet::new();
    for _ in 0..n {
        let mut sock = TcpStream::connect(gw.addr).await.unwrap();
        ports.insert(sock.local_addr().unwrap().port());
        sock.write_all(requests).await.unwrap();
        socks.push(sock);
    }
    let (mut held, mut open) = (0, n);
    // A hang guard, ten times the write timeout: only a connection never closed fails it.
    let closed = until(write * 10, || {
        let ends = server_ends(gw.addr, &ports);
        held = ends.iter().map(|&(_, queued)| queued).fold(held, u64::max);
        open = ends
            .iter()
            .filter(|&&(state, _)| state == ESTABLISHED)
            .count();
        let closed = open == 0;
        async move { closed.then_some(()) }
    })
    .await;
    assert!(
        closed.is_some(),
        "{open} of {n} still open {:?} after they stopped reading, up to {held} bytes queued \
         for one",
        write * 10
    );
    assert!(
        held <= most,
        "a connection that never reads had {held} bytes queued in the kernel"
    );
    // A close that waits to deliver what is queued (a FIN behind it) would keep it for minutes.
    let mut queued = u64::MAX;
    until(Duration::from_secs(5), || {
        queued = server_ends(gw.addr, &ports).iter().map(|&(_, q)| q).sum();
        let dropped = queued == 0;
        async move { dropped.then_some(()) }
    })
    .await;
    assert_eq!(
        queued, 0,
        "the closed connections' answers are still queued"
    );
    // And each client sees its end: what was sent before the close, then EOF or a reset.
    for mut sock in socks {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), sock.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(_)) => {}
                Err(_) => panic!("a connection the server closed is still open"),
            }
        }
    }
}

/// 100 connections from one address, each pipelining 1,000 `GET /metrics` and never reading:
/// once the socket takes no more of their answers, each is closed the write timeout later (its
/// other requests are never answered), and meanwhile each holds a bounded amount.
#[tokio::test]
async fn pipelining_connections_that_never_read_are_closed() {
    let burst = b"GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n".repeat(1_000);
    never_reading(100, &burst, 512 * 1024).await;
}

/// A connection that asks for one large answer (1.5 MB) and never reads is closed the write
/// timeout after the socket stops taking it, and hard: the kernel lets go of the unsent rest at
/// once, where a close that left it to be delivered would hold it until the kernel gives up.
#[tokio::test]
async fn a_large_answer_never_read_is_let_go() {
    let request = b"GET /swagger-ui/swagger-ui-bundle.js HTTP/1.1\r\nHost: gw\r\n\r\n";
    never_reading(20, request, 512 * 1024).await;
}

/// A connection through a small receive buffer (so the server's writes wait on its reading)
/// that has asked for the 1.5 MB swagger bundle: it, the bytes read so far (the head, perhaps
/// some of the body) and the length of the whole answer.
async fn asking_for_a_large_answer(addr: SocketAddr) -> (TcpStream, Vec<u8>, usize) {
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    let mut sock = sock.connect(addr).await.unwrap();
    sock.write_all(b"GET /swagger-ui/swagger-ui-bundle.js HTTP/1.1\r\nHost: gw\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        let n = sock.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the answer's head");
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            assert!(head.starts_with("http/1.1 200 "), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .expect("a content-length")
                .trim()
                .parse()
                .unwrap();
            assert!(length > 1_000_000, "a large answer: {length} bytes");
            return (sock, got, end + 4 + length);
        }
    }
}

/// Reads the rest of an answer of `whole` bytes slowly but steadily, 8 KiB every 25 ms: some
/// 180 reads, 4.5 s at the least. `Err` with what ended it if the server did.
async fn read_slowly(sock: &mut TcpStream, got: &mut Vec<u8>, whole: usize) -> Result<(), String> {
    let mut buf = vec![0u8; 8 * 1024];
    while got.len() < whole {
        // Real time: the reader must be slow against the gateway's real write timer.
        tokio::time::sleep(Duration::from_millis(25)).await;
        match sock.read(&mut buf).await {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            other => return Err(format!("{other:?} after {} bytes", got.len())),
        }
    }
    Ok(())
}

/// A client that reads a large answer slowly but steadily is not cut, though reading it takes
/// several write timeouts; and its connection goes on.
#[tokio::test]
async fn a_slow_reader_is_not_cut() {
    let write = Duration::from_secs(1);
    let gw = with_write_timeout(write).await;
    let (mut sock, mut got, whole) = asking_for_a_large_answer(gw.addr).await;
    let started = Instant::now();
    if let Err(end) = read_slowly(&mut sock, &mut got, whole).await {
        panic!("cut after {:?}: {end}", started.elapsed());
    }
    assert!(started.elapsed() > write * 3, "{:?}", started.elapsed());
    sock.write_all(REQUEST).await.unwrap();
    let (head, _) = response(&mut sock).await;
    assert!(head.starts_with("http/1.1 200 "), "{head}");
}

/// A graceful close waits for the answers in flight to go out, but not for ever: at shutdown,
/// a client reading a large answer slowly but steadily is cut once nothing has been in flight
/// for the write timeout (0.5 s, twice at most), long before it would have read it all (4.5 s).
#[tokio::test]
async fn shutdown_does_not_wait_for_a_slow_reader() {
    let mut gw = with_write_timeout(Duration::from_millis(500)).await;
    let (mut sock, mut got, whole) = asking_for_a_large_answer(gw.addr).await;
    gw.shut_down();
    let read = read_slowly(&mut sock, &mut got, whole).await;
    assert!(
        read.is_err(),
        "the whole answer was read: shutdown waited for it"
    );
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
