//! Listing the layers: `GET /v1/geo`.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::GeoStore;
use super::GeoState;
use crate::error::responses::StoreErrors;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::paging::{Cursor, Page};
use crate::state::AppState;
use crate::types::Name;

/// `/v1/geo`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_layers))
}

/// A layer's name is the listing's cursor.
impl Cursor for Name {
    fn parse_cursor(s: &str) -> Result<Self, String> {
        Name::try_from(s.to_owned()).map_err(|_| format!("not a cursor: {s:?}"))
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    /// The `next` of the previous page; absent or empty means from the first layer.
    after: Option<String>,
    /// Page size, 1..=1000 (default 100).
    #[param(minimum = 1, maximum = 1000, example = 100)]
    limit: Option<usize>,
}

#[derive(Debug, Serialize, ToSchema)]
struct LayerView {
    #[schema(example = "sicily")]
    layer: String,
    /// Places it holds, at least 1.
    #[schema(example = 2)]
    places: u64,
}

#[derive(Debug, Serialize, ToSchema)]
struct LayerPage {
    /// By name.
    layers: Vec<LayerView>,
    /// Opaque cursor for the next page (pass it as `after`), or null on the last page. A page
    /// may hold fewer than `limit` layers and still go on.
    next: Option<String>,
}

/// The layers, by name, paged, each with its number of places.
///
/// Read from an index the writes keep (never a scan of the store): a layer that holds places
/// is listed, one that does not is not (it expired, or its last place was deleted), also while
/// others are being written. A page examines at most `limit` + 1 layers; one that skipped
/// layers that are gone may hold fewer than `limit` and still give a `next`.
#[utoipa::path(
    get, path = "/v1/geo", operation_id = "geoListLayers",
    params(ListQuery),
    responses((status = 200, body = LayerPage), StoreErrors)
)]
async fn list_layers(
    State(state): State<GeoState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<LayerPage>> {
    let page = Page::<Name>::parse(q.after.as_deref(), q.limit)?;
    let found = state
        .store
        .geo_layers(page.after.clone(), page.fetch(), page.fetch())
        .await?;
    let (layers, next) = page.of(found);
    let layers = layers
        .into_iter()
        .map(|(layer, places)| LayerView {
            layer: layer.to_string(),
            places,
        })
        .collect();
    Ok(Json(LayerPage { layers, next }))
}
