//! Geo routes (docs/api.md "Nearby search").

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::put;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::search::{self, ShapeKind};
use super::{
    logic, writable_member, GeoStore, LayerBound, LayerFull, Order, Place, Point, Unit,
    UnknownCentre,
};
use crate::error::responses::{NotFound, NotJson, StoreErrors, TooLarge};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::state::AppState;
use crate::types::{name_rule, Name};

pub fn router() -> OpenApiRouter<AppState> {
    // The fixed segments `nearby` and `distance` win over `{member}`; writing to them is the
    // reserved-name 400, not a 405.
    let reserved = || put(reserved_member).delete(reserved_member);
    OpenApiRouter::new()
        .routes(routes!(put_places))
        .routes(routes!(nearby))
        .routes(routes!(distance))
        .routes(routes!(put_place, get_place, delete_place))
        .route("/v1/geo/{layer}/nearby", reserved())
        .route("/v1/geo/{layer}/distance", reserved())
}

/// What these routes cost the global limiter beyond 1 (README "Route costs").
pub const TERMS: &[RouteTerms] = &[
    // A member longer than 64 bytes turns a layer's sorted set from a listpack into a skip
    // list and a hash table (~1.3 KB for a new 128-character layer holding one): a body under
    // 512 B carries 3-5 such places, ~2 KB, so a batch starts at 2 units (README "Abuse
    // budget"). A 1,000-place batch with short names still fits the default burst.
    RouteTerms::new(
        "POST",
        "/v1/geo/{layer}",
        Rule::PerBody {
            base: 2,
            divisor: 512,
            cap: Cap::Uncapped,
        },
        "2 + body bytes / 512 (a body costing more than the caller's burst is refused with 413)",
    ),
    RouteTerms::new(
        "GET",
        "/v1/geo/{layer}/nearby",
        Rule::Query(nearby_cost),
        "1 + count / 100",
    ),
];

fn nearby_cost(q: &Query<'_>) -> u64 {
    1 + q.number("count", 20) / 100
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PositionBody {
    /// Longitude in [-180, 180].
    #[schema(example = 116.397)]
    lon: f64,
    /// Latitude in [-85.05112878, 85.05112878].
    #[schema(example = 39.909)]
    lat: f64,
}

#[derive(Debug, Serialize, ToSchema)]
struct PlaceView {
    layer: String,
    member: String,
    /// Longitude as stored: the centre of the place's 52-bit geohash cell (as Redis GEOPOS).
    lon: f64,
    /// Latitude as stored.
    lat: f64,
    /// Standard 11-character base32 geohash (as Redis GEOHASH).
    #[schema(example = "wx4g0bm6c40")]
    geohash: String,
}

impl PlaceView {
    fn new(layer: &Name, member: &Name, score: u64) -> Self {
        let at = Point::stored(score);
        Self {
            layer: layer.to_string(),
            member: member.to_string(),
            lon: at.lon,
            lat: at.lat,
            geohash: logic::geohash(score),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = PlacePutReply)]
struct PutReply {
    #[serde(flatten)]
    place: PlaceView,
    /// True when the member is new to the layer (201), false when moved or unchanged (200).
    created: bool,
}

/// Add or move a place.
///
/// 201 when the member is new, 200 when it was moved or re-sent unchanged. The reply gives the
/// position as stored (Redis keeps a 52-bit geohash, so it differs from the input by < 1 m).
#[utoipa::path(
    put,
    path = "/v1/geo/{layer}/{member}",
    operation_id = "geoPutPlace",
    tag = "geo",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!())),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!(), "; `nearby` and `distance` are reserved")),
    ),
    request_body = PositionBody,
    responses(
        (status = 201, body = PutReply, description = "New member"),
        (status = 200, body = PutReply, description = "Moved or unchanged"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`layer_full`: the layer holds `GATEWAY_GEO_MAX_PLACES` places and this write would add more"),
        StoreErrors,
        TooLarge,
        NotJson,
    )
)]
async fn put_place(
    State(state): State<AppState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
    ApiJson(body): ApiJson<PositionBody>,
) -> ApiResult<(StatusCode, Json<PutReply>)> {
    writable_member(&member)?;
    let at = Point::new(body.lon, body.lat)?;
    let place = Place {
        member: member.clone(),
        at,
    };
    let created = state
        .store
        .geo_put_many(&layer, &[place], layer_bound(&state))
        .await?
        .map_err(|LayerFull| layer_full(&layer, &state))?
        == 1;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(PutReply {
            place: PlaceView::new(&layer, &member, logic::encode(at.lon, at.lat)),
            created,
        }),
    ))
}

/// A place: its stored position and geohash.
#[utoipa::path(
    get,
    path = "/v1/geo/{layer}/{member}",
    operation_id = "geoGetPlace",
    tag = "geo",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!())),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!())),
    ),
    responses(
        (status = 200, body = PlaceView),
        StoreErrors,
        NotFound,
    )
)]
async fn get_place(
    State(state): State<AppState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
) -> ApiResult<Json<PlaceView>> {
    let score = state
        .store
        .geo_get(&layer, &member)
        .await?
        .ok_or_else(|| not_found(&layer, &member))?;
    Ok(Json(PlaceView::new(&layer, &member, score)))
}

/// Remove a place.
#[utoipa::path(
    delete,
    path = "/v1/geo/{layer}/{member}",
    operation_id = "geoDeletePlace",
    tag = "geo",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!())),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!())),
    ),
    responses(
        (status = 204, description = "Removed"),
        StoreErrors,
        NotFound,
    )
)]
async fn delete_place(
    State(state): State<AppState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
) -> ApiResult<StatusCode> {
    if state.store.geo_remove(&layer, &member).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&layer, &member))
    }
}

fn not_found(layer: &Name, member: &Name) -> ApiError {
    ApiError::NotFound(format!("no member {member} in layer {layer}"))
}

/// PUT or DELETE on `/v1/geo/{layer}/nearby|distance`: those names are reserved.
async fn reserved_member(ApiPath(_layer): ApiPath<Name>) -> ApiError {
    ApiError::invalid("member names `nearby` and `distance` are reserved (they are routes)")
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PlaceBody {
    /// 1-128 of [A-Za-z0-9._:@-]; `nearby` and `distance` are reserved.
    #[schema(value_type = String, example = "cafe-1")]
    member: Name,
    lon: f64,
    lat: f64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PlacesBody {
    /// 1 to `GATEWAY_MAX_BATCH` (default 1000) places. A member sent twice counts once as
    /// added (if new) and then as updated; the last position wins.
    places: Vec<PlaceBody>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = PlacesPutReply)]
struct PutManyReply {
    /// Members new to the layer.
    added: u64,
    /// Members that were already there (moved or not), including repeats within the batch.
    updated: u64,
}

/// Add or move many places in one call.
///
/// An empty batch is 400; more than `GATEWAY_MAX_BATCH` places is 413. The batch is checked
/// whole before anything is written.
#[utoipa::path(
    post,
    path = "/v1/geo/{layer}",
    operation_id = "geoPutPlaces",
    tag = "geo",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!()))),
    request_body = PlacesBody,
    responses(
        (status = 200, body = PutManyReply),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "`layer_full`: the layer holds `GATEWAY_GEO_MAX_PLACES` places and this write would add more"),
        StoreErrors,
        TooLarge,
        NotJson,
    )
)]
async fn put_places(
    State(state): State<AppState>,
    ApiPath(layer): ApiPath<Name>,
    ApiJson(body): ApiJson<PlacesBody>,
) -> ApiResult<Json<PutManyReply>> {
    crate::extract::batch_size(body.places.len(), state.settings.max_batch, "places")?;
    let places = body
        .places
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let at = writable_member(&p.member)
                .and_then(|()| Point::new(p.lon, p.lat))
                .map_err(|e| ApiError::invalid(format!("places[{i}]: {e}")))?;
            Ok(Place {
                member: p.member,
                at,
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let added = state
        .store
        .geo_put_many(&layer, &places, layer_bound(&state))
        .await?
        .map_err(|LayerFull| layer_full(&layer, &state))?;
    Ok(Json(PutManyReply {
        added,
        updated: places.len() as u64 - added,
    }))
}

/// A layer's bound for a write made now: the configured cap, kept for the retention from now.
fn layer_bound(state: &AppState) -> LayerBound {
    LayerBound {
        max_places: state.settings.geo_max_places,
        expire_at: state.settings.clock.now_s()
            + i64::from(state.settings.geo_retention_days) * 86_400,
    }
}

fn layer_full(layer: &Name, state: &AppState) -> ApiError {
    ApiError::Conflict {
        code: "layer_full",
        detail: format!(
            "layer {layer} holds its most places ({}); remove some first",
            state.settings.geo_max_places
        ),
        extra: None,
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct NearbyQuery {
    /// Centre longitude (with `lat`; or give `member`).
    lon: Option<f64>,
    /// Centre latitude (with `lon`).
    lat: Option<f64>,
    /// Search around this member instead of a point; unknown → 404.
    #[param(value_type = Option<String>)]
    member: Option<Name>,
    /// Radius of a circle search (positive; at most 40,000 km).
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
    get,
    path = "/v1/geo/{layer}/nearby",
    operation_id = "geoNearby",
    tag = "geo",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!())), NearbyQuery),
    responses(
        (status = 200, body = NearbyReply),
        StoreErrors,
        NotFound,
    )
)]
async fn nearby(
    State(state): State<AppState>,
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
    #[param(value_type = String)]
    from: Name,
    /// Another member of the layer.
    #[param(value_type = String)]
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
    get,
    path = "/v1/geo/{layer}/distance",
    operation_id = "geoDistance",
    tag = "geo",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!())), DistanceQuery),
    responses(
        (status = 200, body = DistanceReply),
        StoreErrors,
        NotFound,
    )
)]
async fn distance(
    State(state): State<AppState>,
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
