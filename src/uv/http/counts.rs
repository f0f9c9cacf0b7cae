//! Reading the counts: `GET /v1/uv/{page}` (one day, or a range with its days) and `GET
//! /v1/uv` (distinct visitors over several pages and days).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{days, page, UvStore, MAX_PAGES};
use super::UvState;
use crate::error::responses::StoreErrors;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use crate::types::{name_rule, Day, Name};

/// `GET /v1/uv/{page}` and `GET /v1/uv`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(page_view))
        .routes(routes!(union))
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
    get, path = "/v1/uv/{page}", operation_id = "uvPage",
    params(("page" = String, Path, description = concat!("Page name: ", name_rule!(), ", not `merge`"), example = "home"), PageQuery),
    responses((status = 200, body = PageView), StoreErrors)
)]
async fn page_view(
    State(state): State<UvState>,
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
    get, path = "/v1/uv", operation_id = "uvUnion",
    params(UnionQuery),
    responses((status = 200, body = UnionReply), StoreErrors)
)]
async fn union(
    State(state): State<UvState>,
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
