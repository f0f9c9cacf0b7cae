//! Searching a layer: `GET /v1/geo/{layer}/nearby` (around a point or a member, in a circle
//! or a box) and `GET /v1/geo/{layer}/distance` (between two members).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::search::{self, ShapeKind};
use super::super::{logic, writable_member, GeoStore, Order, Point, Unit, UnknownCentre};
use super::not_found;
use super::GeoState;
use crate::error::responses::Lookup;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use crate::types::{name_rule, Name};

/// `/v1/geo/{layer}/nearby` and `/v1/geo/{layer}/distance`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(nearby))
        .routes(routes!(distance))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct NearbyQuery {
    /// Centre longitude (with `lat`; or give `member`).
    // Examples on the point and the radius alone: Swagger UI sends every example it is given,
    // and `member`, `width` or `height` with them is a 400.
    #[param(example = 116.397)]
    lon: Option<f64>,
    /// Centre latitude (with `lon`).
    #[param(example = 39.909)]
    lat: Option<f64>,
    /// Search around this member instead of a point; unknown → 404.
    #[param(value_type = Option<String>)]
    member: Option<Name>,
    /// Radius of a circle search (positive; at most 40,000 km).
    #[param(example = 2)]
    radius: Option<f64>,
    /// `circle` (default, needs `radius`) or `box` (needs `width` and `height`).
    #[param(inline)]
    shape: Option<ShapeKind>,
    /// Box width, east-west (positive; at most 40,000 km).
    width: Option<f64>,
    /// Box height, north-south (positive; at most 40,000 km).
    height: Option<f64>,
    /// Unit of `radius`, `width`, `height` and of result distances (default `km`).
    #[param(inline)]
    unit: Option<Unit>,
    /// Results at most, 1-1000 (default 20).
    count: Option<u32>,
    /// `asc` nearest first (default) or `desc` farthest first.
    #[param(inline)]
    order: Option<Order>,
    /// By-member only: include the member itself (at distance 0). Default false.
    include_self: Option<bool>,
}

impl From<NearbyQuery> for search::Request {
    fn from(q: NearbyQuery) -> Self {
        Self {
            lon: q.lon,
            lat: q.lat,
            member: q.member,
            radius: q.radius,
            shape: q.shape,
            width: q.width,
            height: q.height,
            unit: q.unit,
            count: q.count,
            order: q.order,
            include_self: q.include_self,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
struct Coordinates {
    lon: f64,
    lat: f64,
}

#[derive(Debug, Serialize, ToSchema)]
struct NearbyHit {
    member: String,
    /// From the centre, in the reply's unit, rounded to 4 decimals (as Redis).
    distance: f64,
    lon: f64,
    lat: f64,
    #[schema(example = "wx4g0bm6c40")]
    geohash: String,
}

#[derive(Debug, Serialize, ToSchema)]
struct NearbyReply {
    layer: String,
    /// The point searched around: as given, or the member's stored position.
    center: Coordinates,
    unit: Unit,
    results: Vec<NearbyHit>,
}

/// Search a layer around a point or a member.
///
/// Give `lon`+`lat` or `member`, and `radius` or `shape=box&width=&height=`. Results are the
/// nearest (`order=asc`, default) or farthest (`desc`) `count` places inside the area. An
/// empty or unknown layer answers 200 with no results; an unknown `member` is 404.
#[utoipa::path(
    get, path = "/v1/geo/{layer}/nearby", operation_id = "geoNearby",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes"), NearbyQuery),
    responses((status = 200, body = NearbyReply), Lookup)
)]
async fn nearby(
    State(state): State<GeoState>,
    ApiPath(layer): ApiPath<Name>,
    ApiQuery(q): ApiQuery<NearbyQuery>,
) -> ApiResult<Json<NearbyReply>> {
    let plan = search::Request::from(q).plan()?;
    let found = state
        .store
        .geo_search(&layer, &plan.search)
        .await?
        .map_err(|UnknownCentre(member)| not_found(&layer, &member))?;
    let hits = plan.results(found.hits);
    Ok(Json(NearbyReply {
        layer: layer.to_string(),
        center: Coordinates {
            lon: found.center.lon,
            lat: found.center.lat,
        },
        unit: plan.search.unit,
        results: hits
            .into_iter()
            .map(|h| {
                let at = Point::stored(h.score);
                NearbyHit {
                    member: h.member,
                    distance: h.distance,
                    lon: at.lon,
                    lat: at.lat,
                    geohash: logic::geohash(h.score),
                }
            })
            .collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct DistanceQuery {
    /// A member of the layer.
    #[param(value_type = String, example = "cafe-1")]
    from: Name,
    /// Another member of the layer.
    #[param(value_type = String, example = "cafe-2")]
    to: Name,
    /// Default `km`.
    #[param(inline)]
    unit: Option<Unit>,
}

#[derive(Debug, Serialize, ToSchema)]
struct DistanceReply {
    from: String,
    to: String,
    /// Rounded to 4 decimals (as Redis GEODIST).
    distance: f64,
    unit: Unit,
}

/// Distance between two members of a layer (404 when either is missing).
#[utoipa::path(
    get, path = "/v1/geo/{layer}/distance", operation_id = "geoDistance",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes"), DistanceQuery),
    responses((status = 200, body = DistanceReply), Lookup)
)]
async fn distance(
    State(state): State<GeoState>,
    ApiPath(layer): ApiPath<Name>,
    ApiQuery(q): ApiQuery<DistanceQuery>,
) -> ApiResult<Json<DistanceReply>> {
    writable_member(&q.from)?;
    writable_member(&q.to)?;
    let unit = q.unit.unwrap_or_default();
    let d = state
        .store
        .geo_distance(&layer, &q.from, &q.to, unit)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "{} or {} is not a member of layer {layer}",
                q.from, q.to
            ))
        })?;
    Ok(Json(DistanceReply {
        from: q.from.to_string(),
        to: q.to.to_string(),
        distance: d,
        unit,
    }))
}
