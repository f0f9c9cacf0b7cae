//! Folding pages into another: `POST /v1/uv/merge`, day by day over a range.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{days, page, retention, FoldDay, Merge, UvStore, MAX_MERGE_SOURCES};
use super::UvState;
use crate::error::responses::JsonBody;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, NoQuery};
use crate::state::AppState;
use crate::types::{Day, Name};

/// `POST /v1/uv/merge`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(merge))
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
    post, path = "/v1/uv/merge", operation_id = "uvMerge",
    request_body = MergeBody,
    responses((status = 200, body = MergeReply), JsonBody)
)]
async fn merge(
    State(state): State<UvState>,
    _: NoQuery,
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
    let cal = retention(state.today(), state.settings.retention_days);
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
        state
            .store
            .uv_merge(
                &into,
                Merge {
                    sources: &sources,
                    days: &fold,
                },
            )
            .await?
    };
    let uv = state.store.uv_page_counts(&into, &range).await?.uv;
    Ok(Json(MergeReply {
        into,
        days: folded,
        uv,
    }))
}
