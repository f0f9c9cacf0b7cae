//! Live events (docs/api.md "Events"): a sale page's stream of a voucher's stock and status,
//! as a browser's EventSource reads it, on every backend.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::common::{
    claim, command_calls, enqueue, on_private_redis, settings, shared_redis, Backend, Gateway,
};

/// One open event stream, read event by event.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

/// One event: its kind, id and JSON data.
#[derive(Debug, Clone)]
struct Event {
    kind: String,
    id: String,
    data: Value,
}

impl Events {
    async fn open(gw: &Gateway, path: &str) -> Result<Self, (u16, Value)> {
        let response = gw
            .client
            .get(gw.url(path))
            .header("accept", "text/event-stream")
            .timeout(Duration::from_secs(3_600))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        if status != 200 {
            return Err((status, response.json().await.unwrap_or(Value::Null)));
        }
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Ok(Self {
            response,
            buffer: String::new(),
        })
    }

    /// The next event (comments and the `retry:` hint skipped); `None` when the stream ended.
    async fn next(&mut self) -> Option<Event> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut kind, mut id, mut data) = (None, String::new(), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        kind = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        id = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if let Some(kind) = kind {
                    let data = serde_json::from_str(&data).unwrap_or(Value::Null);
                    return Some(Event { kind, id, data });
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
                .await
                .expect("an event within 10 s")
                .ok()??;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Events up to and including the first `status` event saying `status`.
    async fn until_status(&mut self, status: &str) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let e = self.next().await.expect("the stream goes on");
            let done = e.kind == "status" && e.data["status"] == status;
            seen.push(e);
            if done {
                return seen;
            }
        }
    }
}

fn at(offset_ms: i64) -> String {
    (Utc::now() + chrono::Duration::milliseconds(offset_ms))
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

async fn voucher(gw: &Gateway, v: &str, stock: u64, begin_in_ms: i64) {
    let body = json!({ "stock": stock, "begin": at(begin_in_ms), "end": at(3_600_000) });
    let (status, view) = gw
        .admin_put(&format!("/v1/seckill/vouchers/{v}"), body)
        .await;
    assert_eq!(status, 201, "{view}");
}

async fn buy(gw: &Gateway, v: &str, user: u64) -> u16 {
    let (status, _) = gw
        .post(
            &format!("/v1/seckill/vouchers/{v}/orders"),
            json!({ "user_id": user }),
        )
        .await;
    status.as_u16()
}

fn voucher_path(v: &str) -> String {
    format!("/v1/seckill/vouchers/{v}")
}

fn events_path(v: &str) -> String {
    format!("/v1/seckill/vouchers/{v}/events")
}

crate::contract_tests!(
    a_sale_page_sees_the_stock_fall_and_the_sell_out,
    the_sale_begins_on_its_stream_at_its_time,
    a_client_holds_at_most_its_streams,
    an_unknown_voucher_has_no_stream,
    shutdown_ends_the_streams,
    a_stream_ends_at_its_age,
    a_page_streams_its_counts_for_today,
    a_queue_streams_its_ready_jobs,
);

/// Two pages watch a voucher while it sells out: each gets the current state first, then the
/// stock falling (coalesced, never past the truth), the `sold_out` status the moment it happens
/// and the final stock; on Redis, through one subscription for both.
async fn a_sale_page_sees_the_stock_fall_and_the_sell_out(backend: Backend) {
    let s = settings(backend);
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    voucher(&gw, "live", 5, -60_000).await;
    let mut pages = Vec::new();
    for _ in 0..2 {
        let mut page = Events::open(&gw, &events_path("live")).await.unwrap();
        let first = page.next().await.unwrap();
        assert_eq!(
            (first.kind.as_str(), &first.data["status"]),
            ("status", &json!("active"))
        );
        let stock = page.next().await.unwrap();
        assert_eq!(stock.kind, "stock");
        assert_eq!(stock.id, first.id, "one state, one id");
        assert_eq!(
            stock.data,
            json!({"voucher_id": "live", "stock": 5, "sold": 0, "status": "active"})
        );
        pages.push(page);
    }
    if backend == Backend::Redis {
        // Subscribed in the background: purchases before it are read once it is made.
        let channel = format!("{prefix}sk:{{live}}:events");
        let subscribers = || {
            let subs = shared_redis().cli(&["PUBSUB", "SHARDNUMSUB", &channel]);
            subs.and_then(|s| s.lines().nth(1).map(str::to_owned))
        };
        crate::common::poll::eventually(Duration::from_secs(10), "subscribed", || async {
            (subscribers().as_deref() == Some("1")).then_some(())
        })
        .await;
    }
    for user in 0..6 {
        let expected = if user < 5 { 201 } else { 409 };
        assert_eq!(buy(&gw, "live", user).await, expected);
    }
    for page in &mut pages {
        let seen = page.until_status("sold_out").await;
        let stocks: Vec<u64> = seen
            .iter()
            .filter(|e| e.kind == "stock")
            .map(|e| e.data["stock"].as_u64().unwrap())
            .collect();
        assert!(
            stocks.windows(2).all(|w| w[0] > w[1]),
            "falling: {stocks:?}"
        );
        let last = page.next().await.unwrap();
        assert_eq!(
            (last.kind.as_str(), last.data.clone()),
            (
                "stock",
                json!({"voucher_id": "live", "stock": 0, "sold": 5, "status": "sold_out"})
            )
        );
    }
    // A page opened now (a reconnect) gets the current state at once.
    let mut late = Events::open(&gw, &events_path("live")).await.unwrap();
    assert_eq!(late.next().await.unwrap().data["status"], "sold_out");
    assert_eq!(late.next().await.unwrap().data["sold"], 5);
}

/// A sale that has not begun shows `pending`, and its stream says `active` when it begins,
/// by the gateway's timer, with no purchase or poll.
async fn the_sale_begins_on_its_stream_at_its_time(backend: Backend) {
    let gw = Gateway::start(backend).await;
    voucher(&gw, "soon", 2, 1_500).await;
    let mut page = Events::open(&gw, &events_path("soon")).await.unwrap();
    assert_eq!(page.next().await.unwrap().data["status"], "pending");
    assert_eq!(page.next().await.unwrap().data["status"], "pending");
    // Real time on Redis (its clock is its own); moved by hand on the memory backend.
    gw.pass(Duration::from_millis(1_600)).await;
    let seen = page.until_status("active").await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let stock = page.next().await.unwrap();
    assert_eq!(stock.data["status"], "active");
    assert_eq!(buy(&gw, "soon", 1).await, 201);
    assert_eq!(page.next().await.unwrap().data["stock"], 1);
}

/// `GATEWAY_MAX_STREAMS_PER_CLIENT`: one stream past it is a 429; a stream closed gives its
/// place back.
async fn a_client_holds_at_most_its_streams(backend: Backend) {
    let mut s = settings(backend);
    s.events.per_client = 2;
    let gw = Gateway::with_settings(s).await;
    voucher(&gw, "capped", 1, -60_000).await;
    let first = Events::open(&gw, &events_path("capped")).await.unwrap();
    let _second = Events::open(&gw, &events_path("capped")).await.unwrap();
    let (status, problem) = Events::open(&gw, &events_path("capped"))
        .await
        .err()
        .expect("a third is refused");
    assert_eq!(
        (status, &problem["code"]),
        (429, &json!("too_many_streams"))
    );
    drop(first);
    crate::common::poll::eventually(Duration::from_secs(10), "a place comes back", || async {
        Events::open(&gw, &events_path("capped")).await.ok()
    })
    .await;
}

async fn an_unknown_voucher_has_no_stream(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (status, problem) = Events::open(&gw, &events_path("nobody"))
        .await
        .err()
        .expect("404");
    assert_eq!((status, &problem["code"]), (404, &json!("not_found")));
}

/// A shutdown ends every stream, so the drain is not held by them.
async fn shutdown_ends_the_streams(backend: Backend) {
    let mut gw = Gateway::start(backend).await;
    voucher(&gw, "closing", 1, -60_000).await;
    let mut page = Events::open(&gw, &events_path("closing")).await.unwrap();
    page.next().await.unwrap();
    page.next().await.unwrap();
    gw.shut_down();
    assert!(page.next().await.is_none(), "the stream ends");
}

/// `GATEWAY_EVENTS_MAX_AGE_S`: the stream ends (its `retry:` brings EventSource back).
async fn a_stream_ends_at_its_age(backend: Backend) {
    let mut s = settings(backend);
    s.events.max_age = Duration::from_secs(2);
    let gw = Gateway::with_settings(s).await;
    voucher(&gw, "aged", 1, -60_000).await;
    let mut page = Events::open(&gw, &events_path("aged")).await.unwrap();
    page.next().await.unwrap();
    page.next().await.unwrap();
    // Real time on Redis (the stream's age is on the gateway's clock, the wall clock there).
    gw.pass(Duration::from_millis(2_100)).await;
    assert!(page.next().await.is_none(), "the stream ends");
}

/// A live visitor counter: today's counts first, then the counts after visits, coalesced to
/// at most one event a second however many visits arrive.
async fn a_page_streams_its_counts_for_today(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let mut page = Events::open(&gw, "/v1/uv/home/events").await.unwrap();
    let first = page.next().await.unwrap();
    assert_eq!(first.kind, "counts");
    assert_eq!(
        (&first.data["page"], &first.data["uv"], &first.data["pv"]),
        (&json!("home"), &json!(0), &json!(0))
    );
    let today = first.data["date"].as_str().unwrap().to_owned();
    for i in 0..20 {
        let (status, body) = gw
            .post(
                "/v1/uv/home",
                json!({ "visitors": [format!("u{}", i % 10)] }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // Real time on Redis; moved by hand on the memory backend (the feed's interval is on the
    // gateway's clock).
    let mut last = first;
    while last.data["pv"] != 20 {
        gw.pass(Duration::from_millis(1_000)).await;
        last = page.next().await.expect("the counts go on");
        assert_eq!(last.data["date"], today.as_str());
    }
    assert_eq!(last.data["uv"], 10);
}

/// A browser worker's queue: the jobs due now, at once, then as enqueues, due times and claims
/// change them.
async fn a_queue_streams_its_ready_jobs(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let mut q = Events::open(&gw, "/v1/queues/work/events").await.unwrap();
    let first = q.next().await.unwrap();
    assert_eq!(
        (first.kind.as_str(), first.data.clone()),
        ("ready", json!({"queue": "work", "ready": 0}))
    );
    enqueue(&gw, "work", json!({"payload": 1})).await;
    assert_eq!(q.next().await.unwrap().data["ready"], 1);
    enqueue(&gw, "work", json!({"payload": 2, "delay_ms": 1_500})).await;
    // Due in 1.5 s: the stream says so then, by the feed's own timer.
    gw.pass(Duration::from_millis(1_600)).await;
    assert_eq!(q.next().await.unwrap().data["ready"], 2);
    assert_eq!(claim(&gw, "work", json!({"max": 2})).await.len(), 2);
    assert_eq!(q.next().await.unwrap().data["ready"], 0);
}

/// On a store of its own: the store's work per change does not grow with the clients (one
/// subscription, one publish per purchase, for five pages), and a store outage ends the streams
/// with `event: error`; once the store is back a reconnect gets the current state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_works_once_per_change_and_an_outage_ends_the_streams() {
    let (mut redis, gw, _prefix) = on_private_redis().await;
    voucher(&gw, "solo", 10, -60_000).await;
    let mut pages = Vec::new();
    for _ in 0..5 {
        let mut page = Events::open(&gw, &events_path("solo")).await.unwrap();
        page.next().await.unwrap();
        page.next().await.unwrap();
        pages.push(page);
    }
    crate::common::poll::eventually(Duration::from_secs(10), "subscribed", || async {
        (command_calls(&redis, "ssubscribe") == 1).then_some(())
    })
    .await;
    let published = command_calls(&redis, "spublish");
    for user in 0..3 {
        assert_eq!(buy(&gw, "solo", user).await, 201);
    }
    for page in &mut pages {
        let mut sold = 0;
        while sold < 3 {
            sold = page.next().await.unwrap().data["sold"].as_u64().unwrap();
        }
    }
    assert_eq!(
        command_calls(&redis, "spublish") - published,
        3,
        "one message per purchase run"
    );
    assert_eq!(
        command_calls(&redis, "ssubscribe"),
        1,
        "one subscription for five pages"
    );

    redis.stop();
    for page in &mut pages {
        let last = page.next().await.expect("told before the end");
        assert_eq!(
            (last.kind.as_str(), last.data.clone()),
            ("error", json!({"code": "backend_unavailable"}))
        );
        assert!(page.next().await.is_none(), "then the stream ends");
    }
    redis.restart();
    // The private server keeps nothing on disk: the sale is defined again, as after a restore.
    crate::common::poll::eventually(Duration::from_secs(20), "the store answers", || async {
        let body = json!({ "stock": 7, "begin": at(-60_000), "end": at(3_600_000) });
        let (status, _) = gw.admin_put(&voucher_path("solo"), body).await;
        (status == 201).then_some(())
    })
    .await;
    // What EventSource does after the end: reconnect (its `retry:`), until the store answers.
    let mut back =
        crate::common::poll::eventually(Duration::from_secs(20), "a stream again", || async {
            let mut page = Events::open(&gw, &events_path("solo")).await.ok()?;
            let first = page.next().await?;
            (first.kind == "status").then_some(page)
        })
        .await;
    let stock = back.next().await.unwrap();
    assert_eq!(
        (&stock.data["stock"], &stock.data["sold"]),
        (&json!(7), &json!(0)),
        "the current state"
    );
}
