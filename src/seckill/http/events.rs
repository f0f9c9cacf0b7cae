//! A voucher's live events (docs/api.md "Events"): `GET /v1/seckill/vouchers/{id}/events`.
//!
//! A voucher's feed (`crate::streams::feed`) hears each write that changes it (a purchase run,
//! a restock, a put publishes `<stock> <sold> <begin> <end>`) and reads it again when the sale
//! begins or ends, by the gateway's clock. Stock changes go out at most once per [`COALESCE`]
//! (the last state always); a status change (the sale begins, ends or sells out) at once.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use futures::future::BoxFuture;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::common::not_found;
use super::SeckillState;
use crate::clients::Caller;
use crate::error::responses::{Lookup, NotFound};
use crate::error::ApiResult;
use crate::extract::{ApiPath, NoQuery};
use crate::seckill::logic::Status;
use crate::seckill::{Changed, Listening, SeckillStore};
use crate::state::AppState;
use crate::store::{Store, StoreError};
use crate::streams::{Frames, Source};
use crate::types::{name_rule, Name};

/// At most one stock event per voucher this often (the last state is always sent).
pub const COALESCE: Duration = Duration::from_millis(100);

/// The events' payloads, in the document's schemas (a stream's body has no schema of its own
/// in OpenAPI 3.1: its description names them).
#[derive(OpenApi)]
#[openapi(components(schemas(StockEvent<'_>, StatusEvent<'_>)))]
struct EventSchemas;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(EventSchemas::openapi()).routes(routes!(voucher_events))
}

/// `event: stock`: the voucher's stock now.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct StockEvent<'a> {
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
pub(super) struct StatusEvent<'a> {
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
    let stream = state.streams.open(identity, &state.feeds, &voucher).await?;
    stream.ok_or_else(|| not_found(&voucher))
}

/// A voucher as its events show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    stock: u64,
    sold: u64,
    status: Status,
    begin_ms: i64,
    end_ms: i64,
}

impl Shown {
    fn of(c: &Changed, now_ms: i64) -> Self {
        Self {
            stock: c.stock,
            sold: c.sold,
            status: Status::at(now_ms, c.begin_ms, c.end_ms, c.stock),
            begin_ms: c.begin_ms,
            end_ms: c.end_ms,
        }
    }
}

/// Vouchers as the feeds see them.
#[derive(Debug)]
pub struct Vouchers {
    pub(super) store: Store,
    pub(super) clock: crate::clock::Clock,
}

/// Every voucher feed of this process.
pub type VoucherFeeds = Arc<crate::streams::Feeds<Vouchers>>;

impl Source for Vouchers {
    type Key = Name;
    type State = Shown;

    const KIND: &'static str = "voucher";
    const EVERY: Duration = COALESCE;

    fn listen<'a>(&'a self, voucher: &'a Name) -> BoxFuture<'a, Result<Listening, StoreError>> {
        Box::pin(self.store.seckill_listen(voucher))
    }

    fn read<'a>(&'a self, voucher: &'a Name) -> BoxFuture<'a, Result<Option<Shown>, StoreError>> {
        Box::pin(async move {
            let v = self.store.seckill_voucher(voucher).await?;
            let now = self.clock.now_ms();
            Ok(v.map(|v| {
                let changed = Changed {
                    stock: v.stock,
                    sold: v.sold,
                    begin_ms: v.begin_ms,
                    end_ms: v.end_ms,
                };
                Shown::of(&changed, now)
            }))
        })
    }

    fn heard(&self, message: &str, now_ms: i64) -> Option<Shown> {
        Changed::read(message).map(|c| Shown::of(&c, now_ms))
    }

    fn urgent(&self, before: &Shown, after: &Shown) -> bool {
        before.status != after.status
    }

    fn due(&self, s: &Shown, now_ms: i64) -> Option<i64> {
        [s.begin_ms, s.end_ms].into_iter().find(|&t| t > now_ms)
    }

    fn events(&self, voucher: &Name, before: Option<&Shown>, now: &Shown, out: &mut Frames<'_>) {
        let voucher_id = voucher.as_str();
        if before.is_none_or(|b| b.status != now.status) {
            let status = StatusEvent {
                voucher_id,
                status: now.status.as_str(),
            };
            out.push("status", &status);
        }
        let stock = StockEvent {
            voucher_id,
            stock: now.stock,
            sold: now.sold,
            status: now.status.as_str(),
        };
        out.push("stock", &stock);
    }
}
