//! The OpenAPI document: info, tags and the admin security scheme here; every path comes from
//! the domain routers (`#[utoipa::path]` on each handler), so spec and routes cannot drift.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "redis-gateway",
        description = "A stateless HTTP/JSON gateway for six classic Redis patterns. Errors are \
                       RFC 9457 problem documents (application/problem+json) with a stable `code`.",
    ),
    tags(
        (name = "checkins", description = "Daily check-ins on bitmaps"),
        (name = "uv", description = "Unique visitors on HyperLogLog"),
        (name = "geo", description = "Nearby search on geo sets"),
        (name = "seckill", description = "Flash sales: atomic stock and orders"),
        (name = "ratelimit", description = "GCRA rate-limit checks, CL.THROTTLE-equivalent"),
        (name = "dedup", description = "News dedup on scalable Bloom filters"),
    ),
    modifiers(&AdminScheme),
)]
struct ApiDoc;

/// Declares the `admin` bearer scheme that admin routes reference.
struct AdminScheme;

impl Modify for AdminScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Every API route with its documentation.
pub fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::checkins::router())
        .merge(crate::uv::router())
        .merge(crate::geo::router())
        .merge(crate::seckill::router())
        .merge(crate::ratelimit::router())
        .merge(crate::dedup::router())
}

/// The OpenAPI document the code describes.
pub fn document() -> utoipa::openapi::OpenApi {
    api_router().split_for_parts().1
}

/// [`document`] as pretty JSON with a trailing newline, as committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let mut json = document()
        .to_pretty_json()
        .expect("the document serialises");
    json.push('\n');
    json
}
