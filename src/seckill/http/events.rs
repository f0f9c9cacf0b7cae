//! A voucher's live events (docs/api.md "Events"): `GET /v1/seckill/vouchers/{id}/events`.
//!
//! One feed per voucher per process, however many clients watch it: it listens to the
//! voucher's channel (one store subscription), keeps the voucher's state, and hands it to every
//! client through a `watch` channel, so a client that does not keep up gets the latest state,
//! never a backlog, and holds no other. Stock changes go out at most once per [`COALESCE`]
//! (the last state always); a status change (the sale begins, ends or sells out) at once: the
//! begin and the end by the feed's own timer on the gateway's clock, a sell-out with the
//! purchase that made it. The feed ends with its last client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use futures::stream;
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::not_found;
use super::SeckillState;
use crate::clients::Caller;
use crate::clock::Clock;
use crate::error::responses::{Lookup, NotFound};
use crate::error::ApiResult;
use crate::extract::{ApiPath, NoQuery};
use crate::seckill::logic::Status;
use crate::seckill::{Changed, Heard, Listening, SeckillStore, Voucher};
use crate::state::AppState;
use crate::store::Store;
use crate::streams::{event, Ended};
use crate::types::{name_rule, Name};

/// At most one stock event per voucher this often (the last state is always sent).
pub const COALESCE: Duration = Duration::from_millis(100);

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(voucher_events))
}

/// `event: stock`: the voucher's stock now.
#[derive(Debug, Serialize, ToSchema)]
struct StockEvent<'a> {
    voucher_id: &'a str,
    /// Units left to sell.
    stock: u64,
    /// Units sold.
    sold: u64,
    /// As in the voucher's view: `pending`, `active`, `ended` or `sold_out`.
    #[schema(example = "active", value_type = String)]
    status: &'static str,
}

/// `event: status`: the sale began, ended or sold out.
#[derive(Debug, Serialize, ToSchema)]
struct StatusEvent<'a> {
    voucher_id: &'a str,
    #[schema(example = "sold_out", value_type = String)]
    status: &'static str,
}

/// Stream a voucher's stock and status (server-sent events).
///
/// `text/event-stream`: first the current state (`event: status`, then `event: stock`), then
/// `event: stock` `{voucher_id, stock, sold, status}` on each change, at most one per 100 ms
/// (the last state always sent), and `event: status` `{voucher_id, status}` the moment the sale
/// begins, ends or sells out. Every event has an `id:`; a reconnect (EventSource's own, with
/// `Last-Event-ID`) gets the current state at once. A comment line every
/// `GATEWAY_EVENTS_HEARTBEAT_MS` keeps a quiet stream open; the stream ends after
/// `GATEWAY_EVENTS_MAX_AGE_S` (reconnect to go on), and with `event: error`
/// `{"code":"backend_unavailable"}` when the store is lost. A client holds at most
/// `GATEWAY_MAX_STREAMS_PER_CLIENT` streams (`429 too_many_streams`).
#[utoipa::path(
    get, path = "/v1/seckill/vouchers/{voucher_id}/events", operation_id = "seckillVoucherEvents",
    params(("voucher_id" = String, Path, description = name_rule!(), example = "v1")),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
         description = "The stream: `event: stock` (StockEvent), `event: status` (StatusEvent)"),
        Lookup, NotFound,
    )
)]
async fn voucher_events(
    State(state): State<SeckillState>,
    ApiPath(voucher): ApiPath<Name>,
    _: NoQuery,
    caller: Option<Extension<Caller>>,
) -> ApiResult<Response> {
    let identity = caller
        .as_ref()
        .map_or("ip:unknown", |c| c.identity.as_str());
    let ticket = state.streams.admit(identity)?;
    let rx = match state
        .feeds
        .watch(&state.store, &voucher, &state.clock)
        .await
    {
        Ok(Some(rx)) => rx,
        Ok(None) => return Err(not_found(&voucher)),
        // A stream that says so at once: EventSource reconnects after an event stream ends,
        // not after an error status.
        Err(_) => {
            let lost = stream::once(async { Err(Ended::StoreLost) });
            return Ok(state.streams.respond(ticket, Vec::new(), lost));
        }
    };
    let first = rx.borrow().clone();
    let id = voucher.to_string();
    let opening = vec![status_event(&id, &first), stock_event(&id, &first)];
    let events = stream::unfold((rx, first.state), move |(mut rx, last)| {
        let id = id.clone();
        async move {
            rx.changed().await.ok()?;
            let now = rx.borrow_and_update().clone();
            if now.lost {
                return Some((Err(Ended::StoreLost), (rx, last)));
            }
            let mut out = Vec::with_capacity(2);
            if now.state.status != last.status {
                out.push(status_event(&id, &now));
            }
            out.push(stock_event(&id, &now));
            Some((Ok(out), (rx, now.state)))
        }
    });
    Ok(state.streams.respond(ticket, opening, events))
}

fn stock_event(voucher: &str, s: &Snapshot) -> axum::response::sse::Event {
    let body = StockEvent {
        voucher_id: voucher,
        stock: s.state.stock,
        sold: s.state.sold,
        status: s.state.status.as_str(),
    };
    event("stock", &s.id(), &body)
}

fn status_event(voucher: &str, s: &Snapshot) -> axum::response::sse::Event {
    let body = StatusEvent {
        voucher_id: voucher,
        status: s.state.status.as_str(),
    };
    event("status", &s.id(), &body)
}

/// What a feed hands its clients.
#[derive(Debug, Clone)]
struct Snapshot {
    /// When the feed started (ms) and its count of states sent: the events' `id`.
    epoch: i64,
    seq: u64,
    state: Shown,
    /// The store was lost: the streams end.
    lost: bool,
}

impl Snapshot {
    fn id(&self) -> String {
        format!("{}-{}", self.epoch, self.seq)
    }
}

/// A voucher as its events show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shown {
    stock: u64,
    sold: u64,
    status: Status,
}

impl Shown {
    fn of(c: &Changed, now_ms: i64) -> Self {
        Self {
            stock: c.stock,
            sold: c.sold,
            status: Status::at(now_ms, c.begin_ms, c.end_ms, c.stock),
        }
    }
}

fn changed(v: &Voucher) -> Changed {
    Changed {
        stock: v.stock,
        sold: v.sold,
        begin_ms: v.begin_ms,
        end_ms: v.end_ms,
    }
}

/// The feeds running in this process, by voucher.
#[derive(Debug, Default)]
pub struct Feeds {
    open: Mutex<HashMap<Name, watch::Sender<Snapshot>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Feeds {
    /// A client's view of `voucher`'s feed, started when none runs; `None` for an unknown
    /// voucher.
    async fn watch(
        self: &Arc<Self>,
        store: &Store,
        voucher: &Name,
        clock: &Clock,
    ) -> Result<Option<watch::Receiver<Snapshot>>, crate::store::StoreError> {
        if let Some(tx) = lock(&self.open).get(voucher) {
            return Ok(Some(tx.subscribe()));
        }
        // Listening before the read: a change after it is heard, one before it is read.
        let listening = store.seckill_listen(voucher).await?;
        let Some(v) = store.seckill_voucher(voucher).await? else {
            return Ok(None);
        };
        let mut open = lock(&self.open);
        // Another client started it meanwhile.
        if let Some(tx) = open.get(voucher) {
            return Ok(Some(tx.subscribe()));
        }
        let current = changed(&v);
        let (tx, rx) = watch::channel(Snapshot {
            epoch: clock.now_ms(),
            seq: 0,
            state: Shown::of(&current, clock.now_ms()),
            lost: false,
        });
        open.insert(voucher.clone(), tx.clone());
        let feed = Feed {
            store: store.clone(),
            voucher: voucher.clone(),
            clock: clock.clone(),
            feeds: Arc::downgrade(self),
            tx,
            current,
            sent_ms: clock.now_ms(),
            pending: false,
        };
        tokio::spawn(feed.run(listening));
        Ok(Some(rx))
    }

    /// Drops `voucher`'s feed if it is `tx` and nobody watches it: whether it did.
    fn close_if_unwatched(&self, voucher: &Name, tx: &watch::Sender<Snapshot>) -> bool {
        let mut open = lock(&self.open);
        if tx.receiver_count() > 0 {
            return false;
        }
        if open.get(voucher).is_some_and(|t| t.same_channel(tx)) {
            open.remove(voucher);
        }
        true
    }
}

/// One voucher's feed task.
struct Feed {
    store: Store,
    voucher: Name,
    clock: Clock,
    feeds: Weak<Feeds>,
    tx: watch::Sender<Snapshot>,
    /// The voucher's state as last heard.
    current: Changed,
    /// When a state was last sent (ms on the clock).
    sent_ms: i64,
    /// `current` differs from what was sent, or may.
    pending: bool,
}

impl Feed {
    async fn run(mut self, mut listening: Listening) {
        loop {
            let now = self.clock.now_ms();
            let flush = self
                .pending
                .then(|| self.sent_ms + COALESCE.as_millis() as i64);
            let boundary = [self.current.begin_ms, self.current.end_ms]
                .into_iter()
                .find(|&t| t > now);
            tokio::select! {
                heard = listening.next() => match heard {
                    Heard::Message(m) => {
                        if let Some(c) = Changed::read(&m) {
                            self.current = c;
                            self.pending = true;
                        }
                    }
                    Heard::Missed => match self.store.seckill_voucher(&self.voucher).await {
                        Ok(Some(v)) => {
                            self.current = changed(&v);
                            self.pending = true;
                        }
                        // Gone (a voucher is never deleted today): nothing more will change.
                        Ok(None) => {}
                        Err(_) => return self.lost(),
                    },
                    Heard::Lost => return self.lost(),
                },
                () = at(&self.clock, flush) => {}
                () = at(&self.clock, boundary) => self.pending = true,
                () = self.tx.closed() => {
                    if let Some(feeds) = self.feeds.upgrade() {
                        if feeds.close_if_unwatched(&self.voucher, &self.tx) {
                            return;
                        }
                    } else {
                        return;
                    }
                }
            }
            self.send();
        }
    }

    /// Sends the current state if it changed: a status change at once, a stock change once
    /// [`COALESCE`] has passed since the last send.
    fn send(&mut self) {
        if !self.pending {
            return;
        }
        let now = self.clock.now_ms();
        let shown = Shown::of(&self.current, now);
        let last = self.tx.borrow().state;
        if shown == last {
            self.pending = false;
            return;
        }
        if shown.status == last.status && now - self.sent_ms < COALESCE.as_millis() as i64 {
            return;
        }
        self.tx.send_modify(|s| {
            s.seq += 1;
            s.state = shown;
        });
        self.sent_ms = now;
        self.pending = false;
    }

    /// The store is lost: the feed's clients are told and it ends.
    fn lost(self) {
        if let Some(feeds) = self.feeds.upgrade() {
            let mut open = lock(&feeds.open);
            if open
                .get(&self.voucher)
                .is_some_and(|t| t.same_channel(&self.tx))
            {
                open.remove(&self.voucher);
            }
        }
        self.tx.send_modify(|s| {
            s.seq += 1;
            s.lost = true;
        });
    }
}

/// Sleeps until `at` (ms on `clock`), or for ever without one.
async fn at(clock: &Clock, at: Option<i64>) {
    match at {
        Some(ms) => clock.sleep_until(ms.saturating_mul(1_000)).await,
        None => std::future::pending().await,
    }
}
