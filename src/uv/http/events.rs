//! A page's live counts (docs/api.md "Events"): `GET /v1/uv/{page}/events`.
//!
//! A page's feed (`crate::streams::feed`) hears each run that records visits (or merges into
//! the page) and reads today's counts again at most once a second, whatever the number of
//! visits or of clients; at midnight (the configured time zone) it reads the new day's.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use axum::Extension;
use chrono::{NaiveTime, TimeZone};
use futures::future::BoxFuture;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::UvState;
use crate::clients::Caller;
use crate::clock::Clock;
use crate::error::responses::Lookup;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, NoQuery};
use crate::state::AppState;
use crate::store::{Store, StoreError};
use crate::streams::{Frames, Source};
use crate::types::{name_rule, Day, Name};
use crate::uv::{Listening, UvStore};

/// At most one counts event per page this often.
pub const EVERY: Duration = Duration::from_secs(1);

/// The events' payloads, in the document's schemas (a stream's body has no schema of its own
/// in OpenAPI 3.1: its description names them).
#[derive(OpenApi)]
#[openapi(components(schemas(CountsEvent<'_>)))]
struct EventSchemas;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(EventSchemas::openapi()).routes(routes!(page_events))
}

/// `event: counts`: the page's figures for today.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct CountsEvent<'a> {
    page: &'a str,
    /// Today (`YYYY-MM-DD`, in the gateway's time zone).
    #[schema(example = "2026-11-29")]
    date: &'a str,
    /// Distinct visitors today (HyperLogLog estimate).
    uv: u64,
    /// Page views today.
    pv: u64,
}

/// Stream a page's visitors and views for today (server-sent events).
///
/// `text/event-stream`: `event: counts` `{page, date, uv, pv}` for today, the current counts
/// first, then at most one a second while they change (a new day's at midnight in the
/// gateway's time zone). Ids, reconnects, heartbeat, end and limits as every event stream
/// (docs/api.md "Events").
#[utoipa::path(
    get, path = "/v1/uv/{page}/events", operation_id = "uvPageEvents",
    params(("page" = String, Path, description = name_rule!(), example = "home")),
    responses(
        (status = 200, content_type = "text/event-stream", body = String,
         description = "The stream: `event: counts` (CountsEvent)"),
        Lookup,
    )
)]
async fn page_events(
    State(state): State<UvState>,
    ApiPath(page): ApiPath<Name>,
    _: NoQuery,
    caller: Option<Extension<Caller>>,
) -> ApiResult<Response> {
    let identity = caller
        .as_ref()
        .map_or("ip:unknown", |c| c.identity.as_str());
    let stream = state.streams.open(identity, &state.feeds, &page).await?;
    // A page is never unknown (one never used counts zeros): its read always answers.
    stream.ok_or_else(|| ApiError::Internal("a page's read answered unknown".to_owned()))
}

/// A page's counts for one day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    day: Day,
    uv: u64,
    pv: u64,
}

/// Pages as the feeds see them.
#[derive(Debug)]
pub struct Pages {
    pub(super) store: Store,
    pub(super) clock: Clock,
    pub(super) tz: chrono_tz::Tz,
}

/// Every page feed of this process.
pub type PageFeeds = Arc<crate::streams::Feeds<Pages>>;

impl Source for Pages {
    type Key = Name;
    type State = Counts;

    const KIND: &'static str = "page";
    const EVERY: Duration = EVERY;

    fn listen<'a>(&'a self, page: &'a Name) -> BoxFuture<'a, Result<Listening, StoreError>> {
        Box::pin(self.store.uv_listen(page))
    }

    fn read<'a>(&'a self, page: &'a Name) -> BoxFuture<'a, Result<Option<Counts>, StoreError>> {
        Box::pin(async move {
            let day = crate::calendar::today(&self.clock, self.tz);
            let counts = self.store.uv_page_counts(page, &[day]).await?;
            let (uv, pv) = counts.daily.first().copied().unwrap_or((0, 0));
            Ok(Some(Counts { day, uv, pv }))
        })
    }

    /// The next midnight in the gateway's time zone: the day's counts start again.
    fn due(&self, counts: &Counts, _now_ms: i64) -> Option<i64> {
        let next = counts.day.succ().0.and_time(NaiveTime::MIN);
        let at = self.tz.from_local_datetime(&next).earliest()?;
        Some(at.timestamp_millis())
    }

    fn events(&self, page: &Name, _: Option<&Counts>, now: &Counts, out: &mut Frames<'_>) {
        let day = now.day.text();
        let body = CountsEvent {
            page: page.as_str(),
            date: std::str::from_utf8(&day).unwrap_or_default(),
            uv: now.uv,
            pv: now.pv,
        };
        out.push("counts", &body);
    }
}
