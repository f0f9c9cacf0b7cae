//! Flash sales: voucher stock in a hash and one atomic Lua purchase; orders in a stream.

use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
}
