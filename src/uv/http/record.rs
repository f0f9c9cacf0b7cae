//! Recording visits: `POST /v1/uv/{page}`, one visitor or a batch, with an optional
//! `Idempotency-Key`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{page, retention, NewVisits, Recorded, UvStore};
use super::UvState;
use crate::clients::IdempotencyKey;
use crate::error::responses::{JsonBody, Unprocessable};
use crate::error::{ApiError, ApiResult};
use crate::extract::{idempotency_key_doc, once_reply, ApiJson, ApiPath, NoQuery};
use crate::state::AppState;
use crate::types::{name_rule, Day, Idempotency, Name};

/// `POST /v1/uv/{page}`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(record))
}

/// Visits to record: exactly one of `visitor` and `visitors`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
// A whole example: composed from its fields, Swagger UI's default body would hold both
// `visitor` and `visitors` (400), and a date: a fixed day is refused once it leaves the
// retention, and Swagger UI's own (today in UTC) can be tomorrow in a time zone behind UTC.
#[schema(example = json!({"visitor": "user-42"}))]
struct VisitBody {
    /// One visitor id (1–512 bytes by default).
    #[schema(example = "user-42")]
    visitor: Option<String>,
    /// Several visitor ids (1 to `max_batch` items, default 1000; more is 413).
    #[schema(example = json!(["user-42", "user-43"]))]
    visitors: Option<Vec<String>>,
    /// The day of the visits (default: today in the configured time zone).
    #[schema(value_type = Option<String>, format = Date)]
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
    post, path = "/v1/uv/{page}", operation_id = "uvRecord",
    params(
        ("page" = String, Path, description = concat!("Page name: ", name_rule!(), ", not `merge`"), example = "home"),
        ("Idempotency-Key" = Option<String>, Header, description = concat!(idempotency_key_doc!(), " (422 `unprocessable` when reused for another request)")),
    ),
    request_body = VisitBody,
    responses((status = 200, body = VisitReply), JsonBody, Unprocessable)
)]
async fn record(
    State(state): State<UvState>,
    IdempotencyKey(key): IdempotencyKey,
    ApiPath(name): ApiPath<Name>,
    _: NoQuery,
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
    crate::extract::batch_size(visitors.len(), state.max_batch, "visitors")?;
    if let Some(bad) = visitors
        .iter()
        .position(|v| v.is_empty() || v.len() > state.max_item_bytes)
    {
        return Err(ApiError::invalid(format!(
            "visitor ids are 1-{} bytes; item {bad} has {}",
            state.max_item_bytes,
            visitors[bad].len()
        )));
    }
    let cal = retention(state.today(), state.settings.retention_days);
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
    let once = state
        .store
        .uv_record(
            &name,
            NewVisits {
                day,
                visitors: &visitors,
                secret: state.settings.visitor_key.as_deref(),
                expire_at: cal.expire_at(day),
                idem: idem.as_ref(),
            },
        )
        .await?;
    once_reply(once, reply)
}
