//! Unique-visitor routes (docs/api.md "Unique visitors").

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{
    days, page, retention, FoldDay, Recorded, UvStore, MAX_MERGE_SOURCES, MAX_PAGES, RESERVED_PAGE,
};
use crate::error::responses::{NotJson, StoreErrors, TooLarge, Unprocessable};
use crate::error::{ApiError, ApiResult};
use crate::extract::{replayed, ApiJson, ApiPath, ApiQuery, IdempotencyKey};
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::state::AppState;
use crate::types::{name_rule, Day, Idempotency, Name, Once};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(record, page_view))
        .routes(routes!(union))
        .routes(routes!(merge))
        // `GET /v1/uv/merge` would read the reserved page: say so instead of a bare 405.
        .route("/v1/uv/merge", get(reserved_page))
}

/// What these routes cost the global limiter beyond 1 (README "Route costs").
pub const TERMS: &[RouteTerms] = &[
    RouteTerms::new(
        "POST",
        "/v1/uv/{page}",
        Rule::PerBody {
            base: 1,
            divisor: 384,
            cap: Cap::Capped,
        },
        "1 + body bytes / 384",
    ),
    RouteTerms::new(
        "GET",
        "/v1/uv/{page}",
        Rule::Query(range_cost),
        "1, or 1 + days / 31 for a from..to range",
    ),
    RouteTerms::new(
        "GET",
        "/v1/uv",
        Rule::Query(union_cost),
        "1 + pages × days / 366",
    ),
    // A day can write one dense HyperLogLog into `into`: 12 KiB, ~15 KiB with the allocator's
    // rounding and the key.
    RouteTerms::new(
        "POST",
        "/v1/uv/merge",
        Rule::Body(merge_cost, Cap::Uncapped),
        "1 + 12 × days from..to (more than the caller's burst is refused with 413: merge fewer days per request)",
    ),
];

fn range_cost(q: &Query<'_>) -> u64 {
    if q.get("from").is_some() || q.get("to").is_some() {
        1 + q.days() / 31
    } else {
        1
    }
}

fn union_cost(q: &Query<'_>) -> u64 {
    let pages = q.get("pages").map_or(1, |p| {
        1 + p.matches(',').count() as u64
            + p.matches("%2C").count() as u64
            + p.matches("%2c").count() as u64
    });
    1 + pages * q.days() / 366
}

fn merge_cost(body: &[u8]) -> u64 {
    #[derive(serde::Deserialize)]
    struct Range {
        from: Option<chrono::NaiveDate>,
        to: Option<chrono::NaiveDate>,
    }
    let days = serde_json::from_slice::<Range>(body)
        .ok()
        .and_then(|r| Some((r.to? - r.from?).num_days() + 1))
        .filter(|d| (1..=366).contains(d))
        .unwrap_or(0) as u64;
    1 + 12 * days
}

/// Visits to record: exactly one of `visitor` and `visitors`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct VisitBody {
    /// One visitor id (1–512 bytes by default).
    #[schema(example = "user-42")]
    visitor: Option<String>,
    /// Several visitor ids (1 to `max_batch` items, default 1000; more is 413).
    visitors: Option<Vec<String>>,
    /// The day of the visits (default: today in the configured time zone).
    #[schema(value_type = Option<String>, format = Date, example = "2026-11-21")]
    date: Option<Day>,
}

#[derive(Debug, Serialize, ToSchema)]
struct VisitReply {
    #[schema(value_type = String)]
    page: Name,
    #[schema(value_type = String, format = Date)]
    date: Day,
    /// True when the day's HyperLogLog changed, i.e. some visitor was (probably) new that day.
    changed: bool,
    /// The day's page views after this request.
    pv: u64,
}

/// Record visits to a page (one visitor or a batch).
///
/// Every visitor in every request adds one page view; distinct visitors are counted by a
/// HyperLogLog (standard error 0.81%). Visitor ids are 1–512 bytes (400 otherwise). An empty
/// batch is 400; a batch over the cap (default 1000) is 413 `payload_too_large`. A future date,
/// or one older than the retention (default 400 days), is 422.
#[utoipa::path(
    post,
    path = "/v1/uv/{page}",
    operation_id = "uvRecord",
    tag = "uv",
    params(
        ("page" = String, Path, description = concat!("Page name: ", name_rule!(), ", not `merge`")),
        ("Idempotency-Key" = Option<String>, Header, description = "1-128 visible ASCII characters; makes a retry safe for 24 h (422 `unprocessable` when reused for another request)"),
    ),
    request_body = VisitBody,
    responses(
        (status = 200, body = VisitReply),
        StoreErrors,
        TooLarge,
        NotJson,
        Unprocessable,
    )
)]
async fn record(
    State(state): State<AppState>,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(name): ApiPath<Name>,
    ApiJson(body): ApiJson<VisitBody>,
) -> ApiResult<Response> {
    let name = page(name)?;
    let visitors = match (body.visitor, body.visitors) {
        (Some(one), None) => vec![one],
        (None, Some(many)) => many,
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of visitor and visitors",
            ))
        }
    };
    let settings = &state.settings;
    crate::extract::batch_size(visitors.len(), settings.max_batch, "visitors")?;
    if let Some(bad) = visitors
        .iter()
        .position(|v| v.is_empty() || v.len() > settings.max_item_bytes)
    {
        return Err(ApiError::invalid(format!(
            "visitor ids are 1-{} bytes; item {bad} has {}",
            settings.max_item_bytes,
            visitors[bad].len()
        )));
    }
    let cal = retention(state.today(), state.settings.uv_retention_days);
    let day = body.date.unwrap_or(cal.today);
    cal.writable(day)?;
    // The request as sent (a date left to "today" stays unset), so a retry the next day still
    // matches and replays the first reply, day included.
    let idem = key.map(|key| Idempotency {
        key,
        fingerprint: crate::types::sha256_hex(
            serde_json::to_string(&(body.date.map(|d| d.to_string()), &visitors))
                .unwrap_or_default()
                .as_bytes(),
        ),
    });
    let reply = |done: Recorded| {
        Json(VisitReply {
            page: name.clone(),
            date: done.day,
            changed: done.changed,
            pv: done.pv,
        })
        .into_response()
    };
    match state
        .store
        .uv_record(&name, day, &visitors, cal.expire_at(day), idem.as_ref())
        .await?
    {
        Once::Now(done) => Ok(reply(done)),
        Once::Replayed(done) => Ok(replayed(reply(done))),
        Once::KeyReused => Err(ApiError::Unprocessable(
            "this Idempotency-Key was used for a different request".to_owned(),
        )),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    /// One day (default: today). Not together with `from`/`to`.
    #[param(value_type = Option<String>, format = Date)]
    date: Option<Day>,
    /// First day of a range, inclusive (default: `to`). Either of `from`/`to` asks for a range.
    #[param(value_type = Option<String>, format = Date)]
    from: Option<Day>,
    /// Last day of a range, inclusive (default: today); at most 366 days from `from`.
    #[param(value_type = Option<String>, format = Date)]
    to: Option<Day>,
}

/// One day of one page.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UvDayView)]
struct DayView {
    #[schema(value_type = String)]
    page: Name,
    #[schema(value_type = String, format = Date)]
    date: Day,
    /// Distinct visitors that day.
    uv: u64,
    /// Visits that day.
    pv: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UvDailyFigures)]
struct DailyFigures {
    #[schema(value_type = String, format = Date)]
    date: Day,
    uv: u64,
    pv: u64,
}

/// A range of days of one page.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UvRangeView)]
struct RangeView {
    #[schema(value_type = String)]
    page: Name,
    #[schema(value_type = String, format = Date)]
    from: Day,
    #[schema(value_type = String, format = Date)]
    to: Day,
    /// Distinct visitors over the whole range (the union, not the sum of days).
    uv: u64,
    /// Visits over the whole range (the sum of days).
    pv: u64,
    daily: Vec<DailyFigures>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[schema(as = UvPageView)]
enum PageView {
    Day(DayView),
    Range(RangeView),
}

/// Unique visitors and page views of a page: one day, or a range with per-day figures.
///
/// `?date=` (default today) answers `{page,date,uv,pv}`; `?from=&to=` (at most 366 days,
/// inclusive) answers `{page,from,to,uv,pv,daily}` where `uv` is the union over the range.
/// A page never written, and days in the future, answer zeros.
#[utoipa::path(
    get,
    path = "/v1/uv/{page}",
    operation_id = "uvPage",
    tag = "uv",
    params(("page" = String, Path, description = concat!("Page name: ", name_rule!(), ", not `merge`")), PageQuery),
    responses(
        (status = 200, body = PageView),
        StoreErrors,
    )
)]
async fn page_view(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<Name>,
    ApiQuery(q): ApiQuery<PageQuery>,
) -> ApiResult<Json<PageView>> {
    let name = page(name)?;
    let today = state.today();
    if q.from.is_none() && q.to.is_none() {
        let day = q.date.unwrap_or(today);
        let counts = state.store.uv_page_counts(&name, &[day]).await?;
        let (uv, pv) = counts.daily[0];
        return Ok(Json(PageView::Day(DayView {
            page: name,
            date: day,
            uv,
            pv,
        })));
    }
    if q.date.is_some() {
        return Err(ApiError::invalid("give either date or from/to, not both"));
    }
    let to = q.to.unwrap_or(today);
    let from = q.from.unwrap_or(to);
    let range = days(from, to)?;
    let counts = state.store.uv_page_counts(&name, &range).await?;
    Ok(Json(PageView::Range(RangeView {
        page: name,
        from,
        to,
        uv: counts.uv,
        pv: counts.daily.iter().map(|(_, pv)| pv).sum(),
        daily: range
            .iter()
            .zip(&counts.daily)
            .map(|(d, (uv, pv))| DailyFigures {
                date: *d,
                uv: *uv,
                pv: *pv,
            })
            .collect(),
    })))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct UnionQuery {
    /// Comma-separated page names, 1 to 100.
    #[param(example = "home,pricing")]
    pages: String,
    /// First day, inclusive (default: `to`).
    #[param(value_type = Option<String>, format = Date)]
    from: Option<Day>,
    /// Last day, inclusive (default: today); at most 366 days from `from`.
    #[param(value_type = Option<String>, format = Date)]
    to: Option<Day>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UvUnionReply)]
struct UnionReply {
    /// The pages asked, in the order given.
    #[schema(value_type = Vec<String>)]
    pages: Vec<Name>,
    #[schema(value_type = String, format = Date)]
    from: Day,
    #[schema(value_type = String, format = Date)]
    to: Day,
    /// Distinct visitors over every page and day.
    uv: u64,
}

/// Distinct visitors over several pages and a range of days.
///
/// `pages` is a comma-separated list of 1 to 100 page names (more is 400). The pages may live
/// in different Redis Cluster slots; their HyperLogLogs are combined in one slot, so this
/// works on a Cluster.
#[utoipa::path(
    get,
    path = "/v1/uv",
    operation_id = "uvUnion",
    tag = "uv",
    params(UnionQuery),
    responses(
        (status = 200, body = UnionReply),
        StoreErrors,
    )
)]
async fn union(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<UnionQuery>,
) -> ApiResult<Json<UnionReply>> {
    let pages = q
        .pages
        .split(',')
        .map(|p| {
            Name::try_from(p.to_owned())
                .map_err(ApiError::InvalidArgument)
                .and_then(|p| page(p).map_err(ApiError::from))
        })
        .collect::<Result<Vec<Name>, ApiError>>()?;
    if pages.len() > MAX_PAGES {
        return Err(ApiError::invalid(format!(
            "at most {MAX_PAGES} pages, got {}",
            pages.len()
        )));
    }
    let to = q.to.unwrap_or(state.today());
    let from = q.from.unwrap_or(to);
    let range = days(from, to)?;
    let mut distinct = pages.clone();
    distinct.sort();
    distinct.dedup();
    let uv = state.store.uv_union(&distinct, &range).await?;
    Ok(Json(UnionReply {
        pages,
        from,
        to,
        uv,
    }))
}

/// Pages to fold into another, day by day.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = UvMergeBody)]
struct MergeBody {
    /// Pages whose visitors are folded in (1 to 20; more is 400 — merge them in several calls).
    #[schema(value_type = Vec<String>, example = json!(["home-v1", "home-v2"]))]
    sources: Vec<Name>,
    /// The page that receives them.
    #[schema(value_type = String, example = "home")]
    into: Name,
    /// First day, inclusive.
    #[schema(value_type = String, format = Date)]
    from: Day,
    /// Last day, inclusive; at most 366 days from `from`.
    #[schema(value_type = String, format = Date)]
    to: Day,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = UvMergeReply)]
struct MergeReply {
    #[schema(value_type = String)]
    into: Name,
    /// Days on which some source had visitors (and were folded).
    days: u32,
    /// Distinct visitors of `into` over the range, after the merge.
    uv: u64,
}

/// Fold source pages' visitors into a page, day by day.
///
/// For each day of the range, `into`'s HyperLogLog becomes the union of itself and the
/// sources' on that day. Only visitors move: `into`'s page views are unchanged, and repeating
/// a merge changes nothing (idempotent). Days in the future or past the retention are not
/// written. At most 20 sources per call (400 past it): merging is associative, so more sources
/// take several calls. Works across Redis Cluster slots.
#[utoipa::path(
    post,
    path = "/v1/uv/merge",
    operation_id = "uvMerge",
    tag = "uv",
    request_body = MergeBody,
    responses(
        (status = 200, body = MergeReply),
        StoreErrors,
        TooLarge,
        NotJson,
    )
)]
async fn merge(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<MergeBody>,
) -> ApiResult<Json<MergeReply>> {
    let into = page(body.into)?;
    let mut sources = body
        .sources
        .into_iter()
        .map(page)
        .collect::<Result<Vec<Name>, _>>()?;
    if sources.is_empty() {
        return Err(ApiError::invalid("sources is empty"));
    }
    if sources.len() > MAX_MERGE_SOURCES {
        return Err(ApiError::invalid(format!(
            "at most {MAX_MERGE_SOURCES} sources, got {}",
            sources.len()
        )));
    }
    sources.sort();
    sources.dedup();
    // Folding a page into itself changes nothing.
    sources.retain(|s| *s != into);
    let range = days(body.from, body.to)?;
    let cal = retention(state.today(), state.settings.uv_retention_days);
    let fold: Vec<FoldDay> = range
        .iter()
        .filter(|d| cal.contains(**d))
        .map(|d| FoldDay {
            day: *d,
            expire_at: cal.expire_at(*d),
        })
        .collect();
    let folded = if sources.is_empty() || fold.is_empty() {
        0
    } else {
        state.store.uv_merge(&sources, &into, &fold).await?
    };
    let uv = state.store.uv_page_counts(&into, &range).await?.uv;
    Ok(Json(MergeReply {
        into,
        days: folded,
        uv,
    }))
}

async fn reserved_page() -> ApiError {
    ApiError::invalid(format!("page name {RESERVED_PAGE:?} is reserved"))
}
