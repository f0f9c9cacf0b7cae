//! The benchmark's floor: what a bare axum + fred handler costs per request, with the same
//! crate versions as the gateway and nothing else — one pool, no middleware, no validation
//! beyond JSON parsing, one store call per request. `./scripts/bench` runs it beside the
//! gateway on the same private Redis, on the same paths, so one wrk scenario drives both and
//! the table can say how far the gateway is above the floor.
//!
//! Live events have a floor too: `GET /v1/seckill/vouchers/{voucher}/events` streams `stock`
//! events from an in-process `broadcast` per voucher, which a ticker sends every 100 ms when
//! the floor's purchases sold more (the gateway's coalescing, at most one event per voucher per
//! 100 ms; a stream that lags skips to the latest, as the gateway's does). It is the least any
//! design that writes each client's events to its own socket pays per event — one wake-up and
//! one write per stream per change, no store subscription, no limiter — so bench/events.py
//! can say how far the gateway is above it. Coalescing matters to the price: an event that
//! finds its connection idle pays the whole loopback round (the receiver's wake-up, its ACK),
//! where events 20 ms apart share them.
//!
//! `FLOOR_LISTEN` (address), `REDIS_URL`, `FLOOR_POOL_SIZE` (default: the gateway's default
//! pool size, 2), `FLOOR_GCRA_SHA`, `FLOOR_SECKILL_SHA`, `FLOOR_ENQUEUE_SHA` (SHAs of
//! bench/lua/gcra.lua, seckill.lua and enqueue.lua, loaded by the harness, which also gives
//! `floor:sk:{<voucher>}` its stock).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::response::Response;
use tokio::sync::broadcast;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Expiration, SetOptions};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Clone)]
struct Floor {
    pool: Pool,
    gcra_sha: String,
    seckill_sha: String,
    enqueue_sha: String,
    // Job ids: a counter is the least a generated id can cost; the floor prices the store call.
    next_job: Arc<AtomicU64>,
    /// Per voucher: its latest `stock` event, framed, and how many were sold.
    live: Arc<Mutex<HashMap<String, Live>>>,
}

#[derive(Clone)]
struct Live {
    frames: broadcast::Sender<Bytes>,
    latest: Arc<Mutex<Bytes>>,
    sold: Arc<AtomicU64>,
}

impl Floor {
    fn live(&self, voucher: &str) -> Live {
        let mut live = self.live.lock().unwrap();
        live.entry(voucher.to_owned())
            .or_insert_with(|| {
                let live = Live {
                    frames: broadcast::Sender::new(16),
                    latest: Arc::new(Mutex::new(frame(0))),
                    sold: Arc::new(AtomicU64::new(0)),
                };
                tokio::spawn(tick(live.clone()));
                live
            })
            .clone()
    }
}

/// Every 100 ms, the voucher's state if it sold more since the last.
async fn tick(live: Live) {
    let mut every = tokio::time::interval(std::time::Duration::from_millis(100));
    let mut sent = 0;
    loop {
        every.tick().await;
        let sold = live.sold.load(Ordering::Relaxed);
        if sold != sent {
            sent = sold;
            let frame = frame(sold);
            *live.latest.lock().unwrap() = frame.clone();
            let _ = live.frames.send(frame);
        }
    }
}

fn frame(sold: u64) -> Bytes {
    Bytes::from(format!(
        "id: {sold}\nevent: stock\ndata: {{\"sold\":{sold},\"status\":\"active\"}}\n\n"
    ))
}

/// A voucher's events: its latest frame at once, then each new one (one that lags skips to
/// the latest).
async fn events(State(f): State<Floor>, Path(voucher): Path<String>) -> Response {
    let live = f.live(&voucher);
    let rx = live.frames.subscribe();
    let first = live.latest.lock().unwrap().clone();
    let stream = futures::stream::unfold(
        (rx, Some(first), live.latest),
        |(mut rx, first, latest)| async move {
            let frame = match first {
                Some(frame) => frame,
                None => match rx.recv().await {
                    Ok(frame) => frame,
                    Err(broadcast::error::RecvError::Lagged(_)) => latest.lock().unwrap().clone(),
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            };
            Some((Ok::<_, Infallible>(frame), (rx, None, latest)))
        },
    );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .unwrap()
}

#[derive(Deserialize)]
struct Buy {
    user_id: u64,
}

#[derive(Deserialize)]
struct Acquire {
    owner: String,
    ttl_ms: i64,
}

#[derive(Deserialize)]
struct Job {
    payload: Value,
}

#[derive(Deserialize)]
struct Visit {
    visitor: String,
}

#[derive(Deserialize)]
struct Check {
    key: String,
    max_burst: u64,
    count_per_period: u64,
    period: u64,
    #[serde(default = "one")]
    quantity: u64,
}

fn one() -> u64 {
    1
}

type Reply = Result<Json<Value>, StatusCode>;

fn unavailable(_: Error) -> StatusCode {
    StatusCode::SERVICE_UNAVAILABLE
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn uv_add(State(f): State<Floor>, Path(page): Path<String>, Json(v): Json<Visit>) -> Reply {
    let changed: bool = f
        .pool
        .pfadd(format!("floor:uv:{page}"), v.visitor)
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({"page": page, "changed": changed})))
}

async fn checkin(State(f): State<Floor>, Path(user): Path<u64>) -> Reply {
    let setbit = CustomCommand::new_static("SETBIT", ClusterHash::FirstKey, false);
    let before: u8 = f
        .pool
        .custom(
            setbit,
            vec![format!("floor:ck:{user}"), "5".into(), "1".into()],
        )
        .await
        .map_err(unavailable)?;
    Ok(Json(
        json!({"user_id": user, "already_checked_in": before == 1}),
    ))
}

async fn ratelimit(State(f): State<Floor>, Json(c): Json<Check>) -> Reply {
    let reply: Vec<i64> = f
        .pool
        .evalsha(
            &f.gcra_sha,
            vec![format!("floor:rl:{}", c.key)],
            vec![c.max_burst, c.count_per_period, c.period, c.quantity],
        )
        .await
        .map_err(unavailable)?;
    let [allowed, limit, remaining, retry, reset] = reply[..] else {
        return Err(StatusCode::INTERNAL_SERVER_ERROR);
    };
    Ok(Json(json!({
        "allowed": allowed == 1, "limit": limit, "remaining": remaining,
        "retry_after_ms": retry / 1000, "reset_after_ms": reset / 1000,
    })))
}

/// One purchase: bench/lua/seckill.lua (the gateway's Redis work for one purchase) by EVALSHA.
async fn purchase(
    State(f): State<Floor>,
    Path(voucher): Path<String>,
    Json(b): Json<Buy>,
) -> Result<(StatusCode, Json<Value>), StatusCode> {
    let key = format!("floor:sk:{{{voucher}}}");
    let reply: fred::types::Value = f
        .pool
        .evalsha(
            &f.seckill_sha,
            vec![
                key.clone(),
                format!("{key}:buyers"),
                format!("{key}:uo"),
                format!("{key}:orders"),
            ],
            vec![b.user_id],
        )
        .await
        .map_err(unavailable)?;
    match reply.as_string() {
        Some(order_id) if !matches!(reply, fred::types::Value::Integer(_)) => {
            // Only a voucher someone watched has a feed (the purchase rows pay no more).
            let live = f.live.lock().unwrap().get(&voucher).cloned();
            if let Some(live) = live {
                live.sold.fetch_add(1, Ordering::Relaxed);
            }
            Ok((
                StatusCode::CREATED,
                Json(json!({"voucher_id": voucher, "user_id": b.user_id, "order_id": order_id})),
            ))
        }
        _ => Err(StatusCode::CONFLICT),
    }
}

/// One acquisition: `SET NX PX`.
async fn lock(State(f): State<Floor>, Path(name): Path<String>, Json(a): Json<Acquire>) -> Reply {
    let set: Option<String> = f
        .pool
        .set(
            format!("floor:lk:{name}"),
            a.owner,
            Some(Expiration::PX(a.ttl_ms)),
            Some(SetOptions::NX),
            false,
        )
        .await
        .map_err(unavailable)?;
    Ok(Json(json!({"name": name, "acquired": set.is_some()})))
}

/// One enqueue: bench/lua/enqueue.lua (`HSET` payload + `ZADD` by due time) by EVALSHA.
async fn enqueue(
    State(f): State<Floor>,
    Path(queue): Path<String>,
    Json(j): Json<Job>,
) -> Result<(StatusCode, Json<Value>), StatusCode> {
    let id = format!("f{}", f.next_job.fetch_add(1, Ordering::Relaxed));
    let due: i64 = f
        .pool
        .evalsha(
            &f.enqueue_sha,
            vec![
                format!("floor:q:{{{queue}}}:due"),
                format!("floor:q:{{{queue}}}:pay"),
            ],
            vec![id.clone(), j.payload.to_string()],
        )
        .await
        .map_err(unavailable)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": id, "queue": queue, "due_ms": due})),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen: SocketAddr = std::env::var("FLOOR_LISTEN")?.parse()?;
    let url = std::env::var("REDIS_URL")?;
    let size = std::env::var("FLOOR_POOL_SIZE").map_or(Ok(2), |s| s.parse())?;
    let pool = Builder::from_config(Config::from_url(&url)?)
        .with_connection_config(|conn| {
            conn.tcp = TcpConfig {
                nodelay: Some(true),
                ..Default::default()
            };
        })
        .build_pool(size)?;
    pool.init().await?;
    let floor = Floor {
        pool,
        gcra_sha: std::env::var("FLOOR_GCRA_SHA").unwrap_or_default(),
        seckill_sha: std::env::var("FLOOR_SECKILL_SHA").unwrap_or_default(),
        enqueue_sha: std::env::var("FLOOR_ENQUEUE_SHA").unwrap_or_default(),
        next_job: Arc::new(AtomicU64::new(0)),
        live: Arc::default(),
    };
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/uv/{page}", post(uv_add))
        .route("/v1/checkins/{user}", post(checkin))
        .route("/v1/ratelimit/check", post(ratelimit))
        .route("/v1/seckill/vouchers/{voucher}/orders", post(purchase))
        .route("/v1/seckill/vouchers/{voucher}/events", get(events))
        .route("/v1/locks/{name}", post(lock))
        .route("/v1/queues/{queue}/jobs", post(enqueue))
        .with_state(floor);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    axum::serve(listener, app).await?;
    Ok(())
}
