//! Rate-limit checks: a GCRA that answers exactly like redis-cell's CL.THROTTLE.

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
