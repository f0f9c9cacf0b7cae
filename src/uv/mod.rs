//! Unique visitors on HyperLogLog (PFADD/PFCOUNT/PFMERGE) with page views beside them.

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
