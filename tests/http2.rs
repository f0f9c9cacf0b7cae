//! HTTP/2 with prior knowledge (h2c) on the HTTP/1 port, through the real binary
//! (docs/operations.md "Connections"): many streams on one connection, a slow stream beside
//! fast ones, the stream bound, the limiter counting each stream, the body and header bounds,
//! the header, idle and write timeouts (a window kept shut), rapid reset, floods of control
//! frames and graceful shutdown. A real HTTP/2 client (the `h2` crate) where a well-behaved
//! client is wanted, raw frames where a misbehaving one is.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{Request, StatusCode};
use common::binary::Binary;
use common::closed_by_server;
use h2::client::SendRequest;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An HTTP/2 connection to `addr`, its connection task spawned; the handle ends with it.
async fn connect(addr: SocketAddr) -> (SendRequest<Bytes>, tokio::task::JoinHandle<()>) {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    (client, task)
}

fn request(method: &str, addr: SocketAddr, path: &str) -> Request<()> {
    Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(())
        .unwrap()
}

/// The status of a `GET /healthz` on `client`.
async fn healthz(client: &SendRequest<Bytes>, addr: SocketAddr) -> StatusCode {
    send(client, request("GET", addr, "/healthz"), None)
        .await
        .unwrap()
        .0
}

/// Sends a request with `body` (none for `None`) and reads the whole answer.
async fn send(
    client: &SendRequest<Bytes>,
    req: Request<()>,
    body: Option<&[u8]>,
) -> Result<(StatusCode, Vec<u8>), h2::Error> {
    let mut client = client.clone().ready().await?;
    let (answer, mut stream) = client.send_request(req, body.is_none())?;
    if let Some(body) = body {
        stream.send_data(Bytes::copy_from_slice(body), true)?;
    }
    read(answer).await
}

async fn read(answer: h2::client::ResponseFuture) -> Result<(StatusCode, Vec<u8>), h2::Error> {
    let (head, mut body) = answer.await?.into_parts();
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        got.extend_from_slice(&chunk);
    }
    Ok((head.status, got))
}

fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(body)))
}

/// More requests at once than a connection may have streams: every one answered, in full.
#[tokio::test]
async fn many_concurrent_streams_on_one_connection_are_all_answered() {
    let gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let (client, _conn) = connect(gw.addr()).await;
    // Once an answer has come, so has the server's SETTINGS (it is sent first): a client
    // learns the stream bound from it, and before it may open any number (RFC 9113 §6.5.2),
    // which the server refuses past the bound.
    assert_eq!(healthz(&client, gw.addr()).await, 200);
    let n = 250;
    let answers = futures::future::join_all((0..n).map(|i| {
        let client = client.clone();
        let addr = gw.addr();
        async move {
            let body = format!(r#"{{"visitors":["v{i}"]}}"#);
            send(
                &client,
                request("POST", addr, "/v1/uv/many"),
                Some(body.as_bytes()),
            )
            .await
        }
    }))
    .await;
    for answer in answers {
        let (status, body) = answer.expect("every stream answered");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }
    let (status, body) = send(&client, request("GET", gw.addr(), "/v1/uv/many"), None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(json(&body)["pv"], n, "{}", String::from_utf8_lossy(&body));
}

/// A request whose body trickles holds its own stream only: the connection's other streams
/// are answered meanwhile, and the slow one is answered once its body is whole. Told by order,
/// not timed: the others are answered before the slow body ends, which the test sends only
/// after them, and the slow one still gets its 200 — had it held them, they would have waited
/// for its request timeout, which answers it 408 instead.
#[tokio::test]
async fn a_slow_stream_does_not_hold_the_others() {
    let gw = Binary::start(&[
        ("GATEWAY_GLOBAL_LIMIT", "off"),
        // Far beyond what 20 requests take on a slow machine.
        ("GATEWAY_REQUEST_TIMEOUT_MS", "30000"),
    ]);
    gw.wait_ready().await;
    let (client, _conn) = connect(gw.addr()).await;
    let mut slow_client = client.clone().ready().await.unwrap();
    let (slow, mut slow_body) = slow_client
        .send_request(request("POST", gw.addr(), "/v1/uv/slow"), false)
        .unwrap();
    slow_body
        .send_data(Bytes::from_static(b"{\"visitors\":"), false)
        .unwrap();

    // The bound, twice the request timeout, only keeps a hang from holding the suite.
    tokio::time::timeout(Duration::from_secs(60), async {
        for _ in 0..20 {
            let (status, _) = send(&client, request("GET", gw.addr(), "/v1/uv/slow"), None)
                .await
                .unwrap();
            assert_eq!(status, 200);
        }
    })
    .await
    .expect("the other streams waited on the slow one");

    slow_body
        .send_data(Bytes::from_static(b"[\"late\"]}"), true)
        .unwrap();
    let (status, body) = read(slow).await.unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["changed"], true);
}

/// Each HTTP/2 request pays the global limiter like an HTTP/1.1 one: with burst 2, three
/// pass and the fourth is 429, though all share one connection.
#[tokio::test]
async fn the_limiter_counts_each_stream() {
    let gw = Binary::start(&[
        ("GATEWAY_GLOBAL_BURST", "2"),
        ("GATEWAY_GLOBAL_COUNT", "1"),
        ("GATEWAY_GLOBAL_PERIOD", "60"),
    ]);
    gw.wait_ready().await;
    let (client, _conn) = connect(gw.addr()).await;
    for i in 0..3 {
        let (status, body) = send(&client, request("GET", gw.addr(), "/v1/uv/limited"), None)
            .await
            .unwrap();
        assert_eq!(
            status,
            200,
            "request {i}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let (status, body) = send(&client, request("GET", gw.addr(), "/v1/uv/limited"), None)
        .await
        .unwrap();
    assert_eq!(status, 429, "{}", String::from_utf8_lossy(&body));
    assert_eq!(json(&body)["code"], "rate_limited");
}

/// `GATEWAY_BODY_LIMIT` holds for HTTP/2 bodies, with or without a `content-length`; and a
/// header list over the HTTP/1 head bound (32 KiB) is 431.
#[tokio::test]
async fn body_and_header_bounds_hold() {
    let gw = Binary::start(&[("GATEWAY_BODY_LIMIT", "100")]);
    gw.wait_ready().await;
    let (client, _conn) = connect(gw.addr()).await;
    let big = format!(r#"{{"visitors":["{}"]}}"#, "v".repeat(500));
    let (status, body) = send(
        &client,
        request("POST", gw.addr(), "/v1/uv/b"),
        Some(big.as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    let mut sized = request("POST", gw.addr(), "/v1/uv/b");
    sized
        .headers_mut()
        .insert("content-length", big.len().to_string().parse().unwrap());
    let (status, _) = send(&client, sized, Some(big.as_bytes())).await.unwrap();
    assert_eq!(status, 413);

    let mut fat = request("GET", gw.addr(), "/healthz");
    fat.headers_mut()
        .insert("x-big", "a".repeat(40 * 1024).parse().unwrap());
    let (client, _conn) = connect(gw.addr()).await;
    let (status, _) = send(&client, fat, None).await.unwrap();
    assert_eq!(status, 431);
    // The connection's other streams go on.
    assert_eq!(healthz(&client, gw.addr()).await, 200);
}

// ---- raw frames, for clients that misbehave ----

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;
const ENHANCE_YOUR_CALM: u32 = 0xb;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// An HPACK header block (static table names, literals never Huffman-coded).
fn header_block(post: bool, path: &str) -> Vec<u8> {
    // :method GET (2) or POST (3), :scheme http (6): indexed fields.
    let mut out = vec![if post { 0x83 } else { 0x82 }, 0x86];
    // :path (4) and :authority (1), literal values without indexing.
    out.push(0x04);
    out.push(path.len() as u8);
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b"\x01\x09localhost");
    if post {
        // content-type (31 = 15 + 16).
        out.extend_from_slice(b"\x0f\x10\x10application/json");
    }
    out
}

#[derive(Debug)]
struct Frame {
    kind: u8,
    stream: u32,
    payload: Vec<u8>,
}

impl Frame {
    /// The error code of a `RST_STREAM` or `GOAWAY`.
    fn error_code(&self) -> u32 {
        let at = if self.kind == GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

/// Reads frames until `done` says so (`Some`), the server closes (`None`), or 5 s pass
/// (panics).
async fn frames_until(
    sock: &mut (impl AsyncRead + Unpin),
    done: impl Fn(&Frame) -> bool,
) -> Option<Frame> {
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        while got.len() >= 9 {
            let len = u32::from_be_bytes([0, got[0], got[1], got[2]]) as usize;
            if got.len() < 9 + len {
                break;
            }
            let f = Frame {
                kind: got[3],
                stream: u32::from_be_bytes(got[5..9].try_into().unwrap()) & 0x7fff_ffff,
                payload: got[9..9 + len].to_vec(),
            };
            got.drain(..9 + len);
            if done(&f) {
                return Some(f);
            }
        }
        match tokio::time::timeout_at(deadline, sock.read(&mut buf)).await {
            Err(_) => panic!("nothing decisive within 5 s"),
            Ok(Ok(0) | Err(_)) => return None,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A raw connection that has sent the preface and an empty SETTINGS, and acknowledged the
/// server's.
async fn raw(addr: SocketAddr) -> TcpStream {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(PREFACE).await.unwrap();
    sock.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
    frames_until(&mut sock, |f| f.kind == SETTINGS)
        .await
        .expect("the server's SETTINGS");
    sock.write_all(&frame(SETTINGS, 0x1, 0, &[])).await.unwrap();
    sock
}

/// A client that opens more streams than `SETTINGS_MAX_CONCURRENT_STREAMS` (100) gets
/// `REFUSED_STREAM` for the one past the bound; the streams within it are not refused.
#[tokio::test]
async fn streams_past_the_bound_are_refused() {
    let gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let mut sock = raw(gw.addr()).await;
    // 101 POSTs whose bodies never come: each stays open.
    let mut out = Vec::new();
    for n in 0..101u32 {
        out.extend(frame(
            HEADERS,
            END_HEADERS,
            2 * n + 1,
            &header_block(true, "/v1/uv/bound"),
        ));
    }
    sock.write_all(&out).await.unwrap();
    let reset = frames_until(&mut sock, |f| f.kind == RST_STREAM || f.kind == GOAWAY)
        .await
        .expect("an answer to the 101st stream");
    assert_eq!(reset.kind, RST_STREAM, "{reset:?}");
    assert_eq!(
        reset.stream, 201,
        "the first stream past the bound is refused"
    );
    assert_eq!(reset.error_code(), REFUSED_STREAM);
}

/// Streams opened and reset at once, over and over ("rapid reset", CVE-2023-44487): the
/// server closes the connection with `GOAWAY ENHANCE_YOUR_CALM` rather than keep setting up
/// streams for nothing, and goes on serving others.
#[tokio::test]
async fn rapid_reset_is_cut_off() {
    let gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let mut sock = raw(gw.addr()).await;
    let mut out = Vec::new();
    for n in 0..2_000u32 {
        let id = 2 * n + 1;
        out.extend(frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            id,
            &header_block(false, "/healthz"),
        ));
        out.extend(frame(RST_STREAM, 0, id, &CANCEL.to_be_bytes()));
    }
    // The server may close before it has read all of it.
    let _ = sock.write_all(&out).await;
    let away = frames_until(&mut sock, |f| f.kind == GOAWAY)
        .await
        .expect("a GOAWAY before the close");
    assert_eq!(away.error_code(), ENHANCE_YOUR_CALM, "{away:?}");
    let (client, _conn) = connect(gw.addr()).await;
    assert_eq!(healthz(&client, gw.addr()).await, 200);
}

/// Sends `setup`, then `one` over and over, on a raw connection, reading meanwhile: the server
/// must answer `GOAWAY ENHANCE_YOUR_CALM` and close.
async fn flood(addr: SocketAddr, what: &str, setup: Vec<u8>, one: Vec<u8>) {
    let (mut from, mut to) = raw(addr).await.into_split();
    let writer = tokio::spawn(async move {
        let _ = to.write_all(&setup).await;
        let many = one.repeat(1_000);
        // 100,000 frames; the server may close before it has read them.
        for _ in 0..100 {
            if to.write_all(&many).await.is_err() {
                break;
            }
        }
        to
    });
    let away = frames_until(&mut from, |f| f.kind == GOAWAY)
        .await
        .unwrap_or_else(|| panic!("{what}: closed without a GOAWAY"));
    assert_eq!(away.error_code(), ENHANCE_YOUR_CALM, "{what}: {away:?}");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), from.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "{what}: still open after the GOAWAY");
    writer.abort();
}

/// Floods of frames that are not requests, each answered cheaply by the HTTP/2 layer but for
/// ever, end the connection with `GOAWAY ENHANCE_YOUR_CALM`, as rapid reset does; others are
/// served meanwhile. (`RST_STREAM` on a stream never opened is a protocol error at once; on
/// a closed stream it is ignored, hence the flood.)
#[tokio::test]
async fn control_frame_floods_are_cut_off() {
    let gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let addr = gw.addr();
    // Stream 3 depends on stream 0, weight 16.
    let priority = frame(PRIORITY, 0, 3, &[0, 0, 0, 0, 15]);
    let window = frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
    let settings = frame(SETTINGS, 0, 0, &[]);
    let ping = frame(PING, 0, 0, &[7; 8]);
    let get = frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &header_block(false, "/healthz"),
    );
    let reset = frame(RST_STREAM, 0, 1, &CANCEL.to_be_bytes());
    tokio::join!(
        flood(addr, "PRIORITY", Vec::new(), priority),
        flood(addr, "WINDOW_UPDATE", Vec::new(), window),
        flood(addr, "SETTINGS", Vec::new(), settings),
        flood(addr, "PING", Vec::new(), ping),
        flood(addr, "RST_STREAM", get, reset),
    );
    let (client, _conn) = connect(addr).await;
    assert_eq!(healthz(&client, addr).await, 200);
}

/// An ordinary client is nowhere near that budget: small windows, so that it sends a
/// `WINDOW_UPDATE` for every few KiB it reads of a 1.5 MB answer, a `PING` every 50 ms, and
/// thousands of requests, one after another and 100 at a time, on one connection.
#[tokio::test]
async fn an_ordinary_client_is_not_cut_off() {
    let gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let tcp = TcpStream::connect(gw.addr()).await.unwrap();
    let (client, mut conn) = h2::client::Builder::new()
        .initial_window_size(4 * 1024)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let mut pings = conn.ping_pong().unwrap();
    let conn = tokio::spawn(conn);
    let pinging = tokio::spawn(async move {
        let mut sent = 0u32;
        while pings.ping(h2::Ping::opaque()).await.is_ok() {
            sent += 1;
            // Real time: pings spread over the real seconds the control-frame budget refills in.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        sent
    });
    let addr = gw.addr();
    for _ in 0..3 {
        let (status, body) = send(
            &client,
            request("GET", addr, "/swagger-ui/swagger-ui-bundle.js"),
            None,
        )
        .await
        .expect("the large answer");
        assert_eq!(status, 200);
        assert!(body.len() > 1_000_000, "{}", body.len());
    }
    for _ in 0..1_000 {
        assert_eq!(healthz(&client, addr).await, 200);
    }
    for _ in 0..10 {
        let answers = futures::future::join_all((0..100).map(|_| healthz(&client, addr))).await;
        assert!(answers.iter().all(|s| *s == 200), "{answers:?}");
    }
    assert!(!conn.is_finished(), "the connection was closed");
    pinging.abort();
}

/// A client whose window is 0 and stays 0 holds the answer it asked for in the server: the
/// connection is closed the write timeout after the answer began (here 1 s, with a 10 s guard),
/// not kept to the idle timeout (60 s) and then for ever by a `GOAWAY` waiting on the answer.
#[tokio::test]
async fn a_client_that_never_opens_its_window_is_closed() {
    let gw = Binary::start(&[("GATEWAY_WRITE_TIMEOUT_MS", "1000")]);
    gw.wait_ready().await;
    let tcp = TcpStream::connect(gw.addr()).await.unwrap();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let (answer, _) = client
        .send_request(request("GET", gw.addr(), "/healthz"), true)
        .unwrap();
    // The head is not flow-controlled; the body is.
    let answer = answer.await.unwrap();
    assert_eq!(answer.status(), 200);
    let began = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(11), conn).await;
    assert!(
        ended.is_ok(),
        "still open {:?} after the answer began",
        began.elapsed()
    );
    drop(answer);
}

/// The header timeout holds before the first request: half a preface, a whole preface with
/// no request after it, or nothing at all, and the connection is closed.
#[tokio::test]
async fn the_header_timeout_cuts_a_connection_without_a_request() {
    let gw = Binary::start(&[("GATEWAY_HEADER_TIMEOUT_MS", "300")]);
    gw.wait_ready().await;
    let mut half = TcpStream::connect(gw.addr()).await.unwrap();
    half.write_all(&PREFACE[..16]).await.unwrap();
    let mut whole = raw(gw.addr()).await;
    let mut silent = TcpStream::connect(gw.addr()).await.unwrap();
    let started = Instant::now();
    assert!(
        closed_by_server(&mut half).await.is_some(),
        "half a preface"
    );
    assert!(
        closed_by_server(&mut whole).await.is_some(),
        "a preface and no request"
    );
    assert!(closed_by_server(&mut silent).await.is_some(), "nothing");
    assert!(started.elapsed() >= Duration::from_millis(250));

    // A client that sends its request in time is served on the same settings.
    let (client, _conn) = connect(gw.addr()).await;
    assert_eq!(healthz(&client, gw.addr()).await, 200);
}

/// `PING`s are not requests: a connection with no stream open is closed the idle timeout
/// after its last request, however often the client pings.
#[tokio::test]
async fn pings_do_not_keep_an_idle_connection_open() {
    let gw = Binary::start(&[("GATEWAY_IDLE_TIMEOUT_MS", "600")]);
    gw.wait_ready().await;
    let tcp = TcpStream::connect(gw.addr()).await.unwrap();
    let (client, mut conn) = h2::client::handshake(tcp).await.unwrap();
    let mut pings = conn.ping_pong().unwrap();
    let conn = tokio::spawn(conn);
    assert_eq!(healthz(&client, gw.addr()).await, 200);
    let answered = Instant::now();
    let pinging = tokio::spawn(async move {
        while pings.ping(h2::Ping::opaque()).await.is_ok() {
            // Real time: pings spread over the real seconds of the gateway's drain.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    // The bound, over ten times the idle timeout, only catches pings that keep it open.
    let ended = tokio::time::timeout(Duration::from_secs(10), conn).await;
    let quiet = answered.elapsed();
    assert!(ended.is_ok(), "still open 10 s later, pinged every 100 ms");
    assert!(
        quiet >= Duration::from_millis(500),
        "closed after {quiet:?}"
    );
    pinging.abort();
}

/// SIGTERM: the server sends `GOAWAY`, the stream in flight still gets its answer, no new
/// stream is taken, and the process exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_streams_in_flight() {
    let mut gw = Binary::start(&[("GATEWAY_GLOBAL_LIMIT", "off")]);
    gw.wait_ready().await;
    let (client, conn) = connect(gw.addr()).await;
    let mut slow_client = client.clone().ready().await.unwrap();
    let (slow, mut slow_body) = slow_client
        .send_request(request("POST", gw.addr(), "/v1/uv/drain"), false)
        .unwrap();
    slow_body
        .send_data(Bytes::from_static(b"{\"visitors\":"), false)
        .unwrap();
    // The stream has reached the gateway once another, sent after it, is answered.
    assert_eq!(healthz(&client, gw.addr()).await, 200);

    gw.sigterm();
    // New streams are answered until the draining process's GOAWAY arrives, then refused.
    let refused = "a new stream refused after GOAWAY";
    common::poll::eventually(Duration::from_secs(10), refused, || async {
        let sent = send(&client, request("GET", gw.addr(), "/healthz"), None).await;
        sent.is_err().then_some(())
    })
    .await;

    slow_body
        .send_data(Bytes::from_static(b"[\"last\"]}"), true)
        .unwrap();
    let (status, body) = read(slow).await.expect("the stream in flight is answered");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    tokio::time::timeout(Duration::from_secs(5), conn)
        .await
        .expect("the connection closes once its streams are done")
        .unwrap();
    let status = tokio::task::spawn_blocking(move || gw.wait_exit(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(status.success(), "{status}");
}

/// An HTTP/2 connection counts against the per-address cap like an HTTP/1.1 one: with a cap
/// of 1, a second connection from the address is closed at once, whatever its streams.
#[tokio::test]
async fn http2_connections_count_against_the_per_address_cap() {
    let gw = Binary::start(&[("GATEWAY_MAX_CONNECTIONS_PER_ADDRESS", "1")]);
    // Not `wait_ready`: its connection could still hold the address's one place.
    gw.line(|l| l.contains("serving on"));
    let (client, _conn) = connect(gw.addr()).await;
    assert_eq!(healthz(&client, gw.addr()).await, 200);
    let mut second = TcpStream::connect(gw.addr()).await.unwrap();
    let _ = second.write_all(PREFACE).await;
    assert!(closed_by_server(&mut second).await.is_some());
    let mut got = Vec::new();
    let _ = second.read_to_end(&mut got).await;
    assert!(got.is_empty(), "no SETTINGS: the server never took it up");
    assert_eq!(
        healthz(&client, gw.addr()).await,
        200,
        "the first connection goes on"
    );
}
