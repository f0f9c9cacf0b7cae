//! Geo routes (docs/api.md "Nearby search").
//!
//! Here: the router, the routes' costs and what they share; `places.rs`: writing and reading
//! places; `queries.rs`: nearby search and distance; `layers.rs`: the listing of layers.

mod layers;
mod places;
mod queries;

use axum::routing::put;
use utoipa_axum::router::OpenApiRouter;

use super::LayerBound;
use crate::clock::Clock;
use crate::error::ApiError;
use crate::extract::ApiPath;
use crate::middleware::costs::{Cap, Query, RouteTerms, Rule};
use crate::state::{AppState, Shared, Slice};
use crate::store::Store;
use crate::types::Name;

/// What the geo routes are handed (`State<GeoState>`), made once at start-up.
pub type GeoState = Slice<Geo>;

/// The geo routes' slice of the state: only what they use.
#[derive(Debug)]
pub struct Geo {
    store: Store,
    settings: super::Settings,
    clock: Clock,
    max_batch: usize,
}

impl From<&Shared> for Geo {
    fn from(shared: &Shared) -> Self {
        Self {
            store: shared.store.clone(),
            settings: shared.part::<crate::geo::Settings>().clone(),
            clock: shared.settings.clock.clone(),
            max_batch: shared.settings.max_batch,
        }
    }
}

/// What the composition takes from this domain (`crate::domain::Domain`).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = super::Flags;

    const TAG: Option<(&'static str, &'static str)> = Some(("geo", "Nearby search on geo sets"));
    const TERMS: &'static [crate::middleware::costs::RouteTerms] = TERMS;

    fn router() -> OpenApiRouter<AppState> {
        // The fixed segments `nearby` and `distance` win over `{member}`; writing to them is the
        // reserved-name 400, not a 405.
        let reserved = || put(reserved_member).delete(reserved_member);
        places::routes()
            .merge(queries::routes())
            .merge(layers::routes())
            .route("/v1/geo/{layer}/nearby", reserved())
            .route("/v1/geo/{layer}/distance", reserved())
    }

    fn slice(slices: crate::state::Slices) -> crate::state::Slices {
        slices.slice::<GeoState>()
    }
}

/// What these routes cost the global limiter beyond 1 (docs/ratelimit.md "Route costs").
pub const TERMS: &[RouteTerms] = &[
    // A member longer than 64 bytes turns a layer's sorted set from a listpack into a skip
    // list and a hash table (~1.3 KB for a new 128-character layer holding one): a body under
    // 432 B carries 3-4 such places, ~2 KB, so a batch starts at 2 units. Past 128 places a
    // layer is a skip list whatever the names, ~102 B a place, and minimal JSON
    // (`{"member":"ab","lon":0,"lat":0}`) sends 32 B of them: hence 432, not 512, which let
    // such a batch store 1.6 KB per unit (docs/performance.md "Abuse budget"). A 1,000-place
    // batch with short names still fits the default burst.
    RouteTerms::new(
        "POST",
        "/v1/geo/{layer}",
        Rule::PerBody {
            base: 2,
            divisor: 432,
            cap: Cap::Uncapped,
        },
        "2 + body bytes / 432 (a body costing more than the caller's burst is refused with 413)",
    ),
    // One place with a 128-character name on a new 128-character layer stores ~1.3 KB, and
    // the layer's entry in the listing's index (two sorted sets) ~520 B more: 2 units.
    RouteTerms::new("PUT", "/v1/geo/{layer}/{member}", Rule::Fixed(2), "2"),
    RouteTerms::new(
        "GET",
        "/v1/geo/{layer}/nearby",
        Rule::Query(nearby_cost),
        "1 + count / 100",
    ),
    // A listing counts the places of each layer it examines (one ZCARD each).
    RouteTerms::new("GET", "/v1/geo", Rule::Query(list_cost), "1 + limit / 100"),
];

fn list_cost(q: &Query<'_>) -> u64 {
    1 + q.page_limit() / 100
}

fn nearby_cost(q: &Query<'_>) -> u64 {
    1 + q.number("count", 20) / 100
}

fn not_found(layer: &Name, member: &Name) -> ApiError {
    ApiError::NotFound(format!("no member {member} in layer {layer}"))
}

/// PUT or DELETE on `/v1/geo/{layer}/nearby|distance`: those names are reserved.
async fn reserved_member(ApiPath(_layer): ApiPath<Name>) -> ApiError {
    ApiError::invalid("member names `nearby` and `distance` are reserved (they are routes)")
}

/// A layer's bound for a write made now: the configured cap, kept for the retention from now.
fn layer_bound(state: &Geo) -> LayerBound {
    LayerBound {
        max_places: state.settings.max_places,
        expire_at: state.clock.now_s() + i64::from(state.settings.retention_days) * 86_400,
    }
}

fn layer_full(layer: &Name, state: &Geo) -> ApiError {
    ApiError::Conflict {
        code: "layer_full",
        detail: format!(
            "layer {layer} holds its most places ({}); remove some first",
            state.settings.max_places
        ),
        extra: None,
    }
}
