//! Nearby search on geo sets (GEOADD/GEOSEARCH): layers of places, radius and box search.

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
