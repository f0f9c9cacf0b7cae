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
        (name = "locks", description = "Distributed locks with fencing tokens"),
        (name = "queues", description = "Delayed queues: due-time sorted sets, atomic claims with visibility timeouts"),
        (name = "clients", description = "API clients: who the caller is and its limiter budget"),
        (name = "ops", description = "Liveness, readiness and metrics; never rate limited"),
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
        .merge(crate::ledger::router())
        .merge(crate::ratelimit::router())
        .merge(crate::dedup::router())
        .merge(crate::locks::router())
        .merge(crate::queues::router())
        .merge(crate::clients::router())
}

/// The routers and the whole document: the API routes (which the global limiter wraps, so
/// their operations get its 429) and the ops routes (exempt, so theirs do not).
/// What every route declares of itself to the shared layers (its limiter cost, how long it may
/// wait): the domains' own terms, put together once per process (they are constants).
pub fn route_terms() -> &'static crate::middleware::costs::Terms {
    static TERMS: std::sync::LazyLock<crate::middleware::costs::Terms> =
        std::sync::LazyLock::new(|| {
            crate::middleware::costs::Terms::new(
                [
                    crate::checkins::TERMS,
                    crate::uv::TERMS,
                    crate::geo::TERMS,
                    crate::ledger::TERMS,
                    crate::ratelimit::TERMS,
                    crate::dedup::TERMS,
                    crate::locks::TERMS,
                    crate::queues::TERMS,
                ]
                .concat(),
            )
        });
    &TERMS
}

pub fn split() -> (
    axum::Router<AppState>,
    axum::Router<AppState>,
    utoipa::openapi::OpenApi,
) {
    let (api, mut document) = api_router().split_for_parts();
    GlobalLimitResponses.modify(&mut document);
    let (ops, ops_document) = crate::ops::router().split_for_parts();
    document.merge(ops_document);
    (api, ops, document)
}

/// The OpenAPI document the code describes.
pub fn document() -> utoipa::openapi::OpenApi {
    split().2
}

/// The global limiter wraps every API route, so every operation can answer 429 with
/// `Retry-After` and the `RateLimit*` headers (docs/api.md "Global limiter"). Declared here once
/// rather than on each handler, because the layer, not the handler, produces it.
struct GlobalLimitResponses;

impl Modify for GlobalLimitResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder, Type};

        let header = |description: &str, kind: Type| {
            HeaderBuilder::new()
                .schema(Some(
                    utoipa::openapi::ObjectBuilder::new()
                        .schema_type(kind)
                        .build(),
                ))
                .description(Some(description))
                .build()
        };
        let limited = ResponseBuilder::new()
            .description(
                "Over the client's global budget (when GATEWAY_GLOBAL_LIMIT is on). Every limited \
                 response, not only this one, carries the RateLimit headers.",
            )
            .content(
                "application/problem+json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            )
            .header(
                "Retry-After",
                header("Seconds until a request fits, rounded up", Type::Integer),
            )
            .header(
                "RateLimit",
                header(
                    "\"global\";r=<remaining>;t=<seconds to reset>",
                    Type::String,
                ),
            )
            .header(
                "RateLimit-Policy",
                header("\"global\";q=<limit>;w=<seconds to refill>", Type::String),
            )
            .header(
                "RateLimit-Limit",
                header("Requests in a full bucket", Type::Integer),
            )
            .header(
                "RateLimit-Remaining",
                header("Requests left now", Type::Integer),
            )
            .header(
                "RateLimit-Reset",
                header("Seconds until the bucket is full again", Type::Integer),
            )
            .build();
        for (path, item) in &mut openapi.paths.paths {
            let operations = [
                ("GET", &mut item.get),
                ("PUT", &mut item.put),
                ("POST", &mut item.post),
                ("DELETE", &mut item.delete),
                ("PATCH", &mut item.patch),
            ];
            for (method, operation) in operations {
                let Some(operation) = operation else { continue };
                operation
                    .responses
                    .responses
                    .entry("429".to_owned())
                    .or_insert_with(|| limited.clone().into());
                // The units of the global limiter this operation spends (the GCRA quantity).
                let cost = route_terms().rule_text(method, path);
                operation
                    .extensions
                    .get_or_insert_with(Default::default)
                    .merge(
                        utoipa::openapi::extensions::ExtensionsBuilder::new()
                            .add("x-ratelimit-cost", cost)
                            .build(),
                    );
            }
        }
    }
}

/// [`document`] as pretty JSON with a trailing newline, as committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let mut json = document()
        .to_pretty_json()
        .expect("the document serialises");
    json.push('\n');
    json
}
