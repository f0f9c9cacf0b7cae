//! News dedup on scalable Bloom filters (RedisBloom when present, else a Lua engine).

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
