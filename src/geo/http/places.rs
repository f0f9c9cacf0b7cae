//! Writing and reading single places, and writing many at once: `PUT`, `GET` and `DELETE
//! /v1/geo/{layer}/{member}`, `POST /v1/geo/{layer}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoResponses, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::super::{logic, writable_member, GeoStore, LayerFull, Place, Point};
use super::GeoState;
use super::{layer_bound, layer_full, not_found};
use crate::error::responses::{JsonBody, Lookup};
use crate::error::{ApiError, ApiResult, Problem};
use crate::extract::{ApiJson, ApiPath, NoQuery, Object};
use crate::state::AppState;
use crate::types::{name_rule, Name};

/// `layer_full`, as the document describes it (a write's refusal: [`super::layer_full`]).
#[allow(dead_code)]
#[derive(Debug, IntoResponses)]
#[response(
    status = 409,
    content_type = "application/problem+json",
    description = "`layer_full`: the layer holds `GATEWAY_GEO_MAX_PLACES` places and this write would add more"
)]
struct LayerFullProblem(Problem);

/// `/v1/geo/{layer}` and `/v1/geo/{layer}/{member}`.
pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_places))
        .routes(routes!(put_place, get_place, delete_place))
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
    put, path = "/v1/geo/{layer}/{member}", operation_id = "geoPutPlace",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes"),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!(), "; `nearby` and `distance` are reserved"), example = "cafe-1"),
    ),
    request_body = PositionBody,
    responses(
        (status = 201, body = PutReply, description = "New member"),
        (status = 200, body = PutReply, description = "Moved or unchanged"),
        JsonBody, LayerFullProblem,
    )
)]
async fn put_place(
    State(state): State<GeoState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
    _: NoQuery,
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
    get, path = "/v1/geo/{layer}/{member}", operation_id = "geoGetPlace",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes"),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!()), example = "cafe-1"),
    ),
    responses((status = 200, body = PlaceView), Lookup)
)]
async fn get_place(
    State(state): State<GeoState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
    _: NoQuery,
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
    delete, path = "/v1/geo/{layer}/{member}", operation_id = "geoDeletePlace",
    params(
        ("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes"),
        ("member" = String, Path, description = concat!("Member name: ", name_rule!()), example = "cafe-1"),
    ),
    responses((status = 204, description = "Removed"), Lookup)
)]
async fn delete_place(
    State(state): State<GeoState>,
    ApiPath((layer, member)): ApiPath<(Name, Name)>,
    _: NoQuery,
) -> ApiResult<StatusCode> {
    if state.store.geo_remove(&layer, &member).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&layer, &member))
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PlaceBody {
    /// 1-128 of [A-Za-z0-9._:@-]; `nearby` and `distance` are reserved.
    #[schema(value_type = String, example = "cafe-1")]
    member: Name,
    #[schema(example = 116.397)]
    lon: f64,
    #[schema(example = 39.909)]
    lat: f64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
// Two places, so the example of `GET /v1/geo/{layer}/distance` finds both.
#[schema(example = json!({"places": [
    {"member": "cafe-1", "lon": 116.397, "lat": 39.909},
    {"member": "cafe-2", "lon": 116.404, "lat": 39.915},
]}))]
struct PlacesBody {
    /// 1 to `GATEWAY_MAX_BATCH` (default 1000) places. A member sent twice counts once as
    /// added (if new) and then as updated; the last position wins.
    #[serde(deserialize_with = "places")]
    places: Vec<PlaceBody>,
}

/// Each place is an object too (see [`Object`]).
fn places<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<PlaceBody>, D::Error> {
    let places = Vec::<Object<PlaceBody>>::deserialize(d)?;
    Ok(places.into_iter().map(|Object(place)| place).collect())
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
    post, path = "/v1/geo/{layer}", operation_id = "geoPutPlaces",
    params(("layer" = String, Path, description = concat!("Layer name: ", name_rule!()), example = "cafes")),
    request_body = PlacesBody,
    responses((status = 200, body = PutManyReply), JsonBody, LayerFullProblem)
)]
async fn put_places(
    State(state): State<GeoState>,
    ApiPath(layer): ApiPath<Name>,
    _: NoQuery,
    ApiJson(body): ApiJson<PlacesBody>,
) -> ApiResult<Json<PutManyReply>> {
    crate::extract::batch_size(body.places.len(), state.max_batch, "places")?;
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
