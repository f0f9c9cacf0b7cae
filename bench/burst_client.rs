//! The sale burst's client (bench/burst.py): many connections of distinct buyers buying one
//! voucher until each is refused, timing every answer. In Rust because a Python client spent
//! more time per request than the gateway did, and its own queueing showed up as the
//! gateway's p99; wrk cannot stop at sold out or time the 201s apart from the refusals.
//!
//! `burst_client <port> <voucher> <first user id> <connections>`: every connection is open
//! before the first purchase; each sends its next purchase (a new user id) when its last answer
//! came, and stops after its first answer that is not a 201. Prints one line per answer:
//! `<status> <µs from write to the answer's last byte> <user id> <body>`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

type Answer = (u16, u128, u64, String);

/// One HTTP/1.1 answer with a `Content-Length` (the gateway's JSON answers have one).
async fn read_answer(conn: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<(u16, String)> {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let status = head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let length: usize = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0);
            let start = end + 4;
            while buf.len() < start + length {
                let n = conn.read(&mut chunk).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = String::from_utf8_lossy(&buf[start..start + length]).into_owned();
            return Ok((status, body));
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn buyer(
    mut conn: TcpStream,
    port: u16,
    voucher: Arc<str>,
    users: Arc<AtomicU64>,
) -> std::io::Result<Vec<Answer>> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(4096);
    loop {
        let user = users.fetch_add(1, Ordering::Relaxed);
        let body = format!("{{\"user_id\":{user}}}");
        let req = format!(
            "POST /v1/seckill/vouchers/{voucher}/orders HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let t0 = Instant::now();
        conn.write_all(req.as_bytes()).await?;
        let (status, answer) = read_answer(&mut conn, &mut buf).await?;
        out.push((status, t0.elapsed().as_micros(), user, answer));
        if status != 201 {
            return Ok(out);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, port, voucher, first, conns] = &args[..] else {
        return Err("usage: burst_client <port> <voucher> <first user id> <connections>".into());
    };
    let port: u16 = port.parse()?;
    let voucher: Arc<str> = voucher.as_str().into();
    let users = Arc::new(AtomicU64::new(first.parse()?));
    let mut open = Vec::new();
    for _ in 0..conns.parse::<usize>()? {
        let conn = TcpStream::connect(("127.0.0.1", port)).await?;
        conn.set_nodelay(true)?;
        open.push(conn);
    }
    let tasks: Vec<_> = open
        .into_iter()
        .map(|c| tokio::spawn(buyer(c, port, voucher.clone(), users.clone())))
        .collect();
    let mut lines = String::new();
    for t in tasks {
        for (status, us, user, body) in t.await?? {
            lines.push_str(&format!("{status} {us} {user} {body}\n"));
        }
    }
    print!("{lines}");
    Ok(())
}
