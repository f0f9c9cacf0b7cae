//! The live-events client (bench/events.py): many event streams on one voucher while one buyer
//! buys, timing how long each purchase's `201` takes to reach every stream. Written for the
//! job: SSE load generators time a stream's events, not the gap from another connection's
//! answer to them, and a Python client reading 10,000 sockets spent more time than the gateway.
//!
//! `sse_client <port> <voucher> <streams> <purchases> <pause ms>`: opens every stream (each
//! reads its first state), prints `open <n>` and waits for a line on stdin (the driver measures
//! the idle gateway then); buys `<purchases>` units one after another, `<pause ms>` apart, on a
//! connection of its own; waits until every stream has seen the last sale (at most 10 s), then
//! prints `streams <n> events <n> purchases <n> p50_ms <x> p99_ms <x> max_ms <x> missed <n>`:
//! the latency of purchase k to a stream is from its 201 to the stream's first `stock` event
//! with `sold` ≥ k (a coalesced event answers several purchases).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// A stream's `stock` events: `sold` and when it arrived (µs since the client started).
type Seen = Vec<(u64, u64)>;

async fn open_stream(port: u16, voucher: &str) -> std::io::Result<BufReader<TcpStream>> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await?;
    conn.set_nodelay(true)?;
    let req = format!(
        "GET /v1/seckill/vouchers/{voucher}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Accept: text/event-stream\r\n\r\n"
    );
    conn.write_all(req.as_bytes()).await?;
    Ok(BufReader::with_capacity(1024, conn))
}

/// Reads a stream's lines until `sold` reaches `last` or it ends, noting each stock event.
/// The body is chunked: the chunk-size lines are not `data:` lines and are passed over.
async fn follow(
    mut reader: BufReader<TcpStream>,
    epoch: Instant,
    last: u64,
    opened: Arc<Semaphore>,
) -> Seen {
    let mut seen = Vec::new();
    let mut line = String::new();
    let mut stock = false;
    let mut first = true;
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return seen,
            Ok(_) => {}
        }
        if line.starts_with("event: stock") {
            stock = true;
        } else if let (true, Some(data)) = (stock, line.strip_prefix("data: ")) {
            stock = false;
            let sold = data
                .split("\"sold\":")
                .nth(1)
                .and_then(|rest| rest.split([',', '}']).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let at = epoch.elapsed().as_micros() as u64;
            if first {
                first = false;
                opened.add_permits(1);
            } else {
                seen.push((sold, at));
            }
            if sold >= last {
                return seen;
            }
        }
    }
}

async fn buy(port: u16, voucher: &str, n: u64, pause: Duration, epoch: Instant) -> Vec<u64> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    conn.set_nodelay(true).unwrap();
    let mut done = Vec::new();
    let mut buf = vec![0u8; 4096];
    for user in 0..n {
        let body = format!("{{\"user_id\":{user}}}");
        let req = format!(
            "POST /v1/seckill/vouchers/{voucher}/orders HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        conn.write_all(req.as_bytes()).await.unwrap();
        // One small answer per request: its head and body arrive together on loopback; the
        // status is all that is read.
        let got = conn.read(&mut buf).await.unwrap();
        let head = String::from_utf8_lossy(&buf[..got]);
        assert!(head.starts_with("HTTP/1.1 201"), "purchase {user}: {head}");
        done.push(epoch.elapsed().as_micros() as u64);
        tokio::time::sleep(pause).await;
    }
    done
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, port, voucher, streams, purchases, pause] = &args[..] else {
        return Err("usage: sse_client <port> <voucher> <streams> <purchases> <pause ms>".into());
    };
    let port: u16 = port.parse()?;
    let voucher: Arc<str> = voucher.as_str().into();
    let streams: usize = streams.parse()?;
    let purchases: u64 = purchases.parse()?;
    let pause = Duration::from_millis(pause.parse()?);
    let epoch = Instant::now();
    let opened = Arc::new(Semaphore::new(0));
    let mut tasks = Vec::with_capacity(streams);
    // Connections in waves, so the listen backlog never overflows.
    for wave in (0..streams).collect::<Vec<_>>().chunks(500) {
        for _ in wave {
            let reader = open_stream(port, &voucher).await?;
            tasks.push(tokio::spawn(follow(
                reader,
                epoch,
                purchases,
                opened.clone(),
            )));
        }
        opened.acquire_many(wave.len() as u32).await?.forget();
    }
    println!("open {streams}");
    // Blocking: the client's one thread has nothing else to do until the driver says go.
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await??;
    let bought = buy(port, &voucher, purchases, pause, epoch).await;
    let mut latencies = Vec::new();
    let (mut events, mut missed) = (0usize, 0usize);
    for task in tasks {
        let seen = match tokio::time::timeout(Duration::from_secs(10), task).await {
            Ok(Ok(seen)) => seen,
            _ => {
                missed += 1;
                continue;
            }
        };
        events += seen.len();
        for (k, at) in bought.iter().enumerate() {
            let k = k as u64 + 1;
            match seen.iter().find(|(sold, _)| *sold >= k) {
                Some((_, got)) => latencies.push(got.saturating_sub(*at)),
                None => missed += 1,
            }
        }
    }
    latencies.sort_unstable();
    println!(
        "streams {streams} events {events} purchases {purchases} p50_ms {:.1} p99_ms {:.1} max_ms {:.1} missed {missed}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(0) as f64 / 1000.0,
    );
    Ok(())
}
