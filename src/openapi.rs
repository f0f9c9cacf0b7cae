//! The domains' routes composed (from the list in `settings.rs`: their routers, their route
//! terms and their document tags) and the OpenAPI document: info and the admin security scheme here; every
//! path comes from the domain routers (`#[utoipa::path]` on each handler), so spec and routes
//! cannot drift.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::middleware::costs::Terms;
use crate::settings::ROUTES;
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "redis-gateway",
        description = "A stateless HTTP/JSON gateway for six classic Redis patterns. Errors are \
                       RFC 9457 problem documents (application/problem+json) with a stable `code`.",
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

/// The tag of the ops routes, after the domains'.
const OPS_TAG: (&str, &str) = ("ops", "Liveness, readiness and metrics; never rate limited");

/// Every API route with its documentation.
pub fn api_router() -> OpenApiRouter<AppState> {
    let mut document = ApiDoc::openapi();
    document.tags = Some(
        ROUTES
            .iter()
            .filter_map(|d| d.tag)
            .chain([OPS_TAG])
            .map(|(name, description)| {
                utoipa::openapi::tag::TagBuilder::new()
                    .name(name)
                    .description(Some(description))
                    .build()
            })
            .collect(),
    );
    ROUTES
        .iter()
        .fold(OpenApiRouter::with_openapi(document), |api, d| {
            let router = (d.router)();
            api.merge(match d.tag {
                Some((tag, _)) => tagged(router, tag),
                None => router,
            })
        })
}

/// Files every operation of a domain's router under the domain's tag, so that its handlers do
/// not each repeat it.
fn tagged(mut router: OpenApiRouter<AppState>, tag: &str) -> OpenApiRouter<AppState> {
    for item in router.get_openapi_mut().paths.paths.values_mut() {
        for operation in operations(item)
            .into_iter()
            .filter_map(|(_, op)| op.as_mut())
        {
            operation.tags.get_or_insert_with(|| vec![tag.to_owned()]);
        }
    }
    router
}

/// A path's operations, by method, for the methods this API uses.
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> [(&'static str, &mut Option<utoipa::openapi::path::Operation>); 5] {
    [
        ("GET", &mut item.get),
        ("PUT", &mut item.put),
        ("POST", &mut item.post),
        ("DELETE", &mut item.delete),
        ("PATCH", &mut item.patch),
    ]
}

/// What every route declares of itself to the shared layers (its limiter cost, how long it may
/// wait): the domains' own terms, put together once per process (they are constants).
pub fn route_terms() -> &'static Terms {
    static TERMS: std::sync::LazyLock<Terms> = std::sync::LazyLock::new(|| {
        Terms::new(ROUTES.iter().flat_map(|d| d.terms).cloned().collect())
    });
    &TERMS
}

/// The routers and the whole document: the API routes (which the global limiter wraps, so
/// their operations get its 429) and the ops routes (exempt, so theirs do not).
pub fn split() -> (
    axum::Router<AppState>,
    axum::Router<AppState>,
    utoipa::openapi::OpenApi,
) {
    let (api, mut document) = api_router().split_for_parts();
    GlobalLimitResponses.modify(&mut document);
    ReplayHeader.modify(&mut document);
    let (ops, ops_document) = crate::ops::router().split_for_parts();
    document.merge(ops_document);
    ErrorHeaders.modify(&mut document);
    (api, ops, document)
}

/// Every operation by operationId, with the method and route template it is served at: what a
/// limit policy names (docs/policies.md).
pub fn operation_routes() -> crate::policies::Operations {
    let mut document = document();
    let mut routes = crate::policies::Operations::new();
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations(item) {
            if let Some(id) = operation.as_ref().and_then(|o| o.operation_id.clone()) {
                routes.insert(id, (method.to_owned(), path.clone()));
            }
        }
    }
    routes
}

/// The OpenAPI document the code describes.
pub fn document() -> utoipa::openapi::OpenApi {
    split().2
}

/// The global limiter wraps every API route, so every operation can answer 429 with
/// `Retry-After` and the `RateLimit*` headers (docs/api.md "Global limiter"), and 401 when the
/// `X-Api-Key` that names the client matches none. Declared here once rather than on each
/// handler, because the layer, not the handler, produces them.
struct GlobalLimitResponses;

impl Modify for GlobalLimitResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let limited = limited_response();
        let unknown_key = unknown_key_response();
        for (path, item) in &mut openapi.paths.paths {
            for (method, operation) in operations(item) {
                let Some(operation) = operation else { continue };
                operation
                    .responses
                    .responses
                    .entry("429".to_owned())
                    .or_insert_with(|| limited.clone().into());
                // Where the operation names its own 401 (admin token, API key, user token),
                // that description stands.
                operation
                    .responses
                    .responses
                    .entry("401".to_owned())
                    .or_insert_with(|| unknown_key.clone().into());
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

/// The 429 of the global limiter, with the headers every limited response carries.
fn limited_response() -> utoipa::openapi::Response {
    use utoipa::openapi::header::HeaderBuilder;
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder, Type};

    let headers = [
        (
            "Retry-After",
            "Seconds until a request fits, rounded up",
            Type::Integer,
        ),
        (
            "RateLimit",
            "\"global\";r=<remaining>;t=<seconds to reset>",
            Type::String,
        ),
        (
            "RateLimit-Policy",
            "\"global\";q=<limit>;w=<seconds to refill>",
            Type::String,
        ),
        (
            "RateLimit-Limit",
            "Requests in a full bucket",
            Type::Integer,
        ),
        ("RateLimit-Remaining", "Requests left now", Type::Integer),
        (
            "RateLimit-Reset",
            "Seconds until the bucket is full again",
            Type::Integer,
        ),
    ];
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
        );
    headers
        .into_iter()
        .fold(limited, |response, (name, description, kind)| {
            let schema = utoipa::openapi::ObjectBuilder::new().schema_type(kind);
            let header = HeaderBuilder::new()
                .schema(Some(schema.build()))
                .description(Some(description));
            response.header(name, header.build())
        })
        .build()
}

/// The 401 of an `X-Api-Key` that names no client, for the operations that name no 401 of
/// their own.
fn unknown_key_response() -> utoipa::openapi::Response {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};

    ResponseBuilder::new()
        .description(
            "`unauthorized`: the `X-Api-Key` matches no configured client (with \
             `WWW-Authenticate`).",
        )
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build()
}

/// Every operation that takes an `Idempotency-Key` answers a repeat with the first reply and
/// `Idempotency-Replayed: true` (docs/clients.md "Retries: `Idempotency-Key`"): declared on its
/// successes once here, as the handlers share the mechanism.
struct ReplayHeader;

impl Modify for ReplayHeader {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::{ObjectBuilder, RefOr, Type};

        let header = HeaderBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["true"]))
                    .build(),
            ))
            .description(Some(
                "`true` when this is the recorded reply to an earlier request with the same \
                 `Idempotency-Key` and body (nothing was done again). A refusal the first \
                 request got from the store (a purchase's `sold_out`) is replayed the same way.",
            ))
            .build();
        for item in openapi.paths.paths.values_mut() {
            for (_, operation) in operations(item) {
                let Some(operation) = operation else { continue };
                let keyed = operation.parameters.iter().flatten().any(|p| {
                    matches!(p, RefOr::T(p) if p.name.eq_ignore_ascii_case("idempotency-key")
                        && p.parameter_in == utoipa::openapi::path::ParameterIn::Header)
                });
                if !keyed {
                    continue;
                }
                for (status, response) in &mut operation.responses.responses {
                    // The successes. Of the refusals only some are recorded (a purchase's sold
                    // out is, a bad body or a full queue is not): the description says so.
                    if !status.starts_with('2') {
                        continue;
                    }
                    if let RefOr::T(response) = response {
                        response
                            .headers
                            .insert("Idempotency-Replayed".to_owned(), header.clone().into());
                    }
                }
            }
        }
    }
}

/// Every 401 carries `WWW-Authenticate` and every 503 of a failing store `Retry-After` (docs/api.md
/// "Errors"): [`crate::error::ApiError`] adds them whichever route answers, so they are declared
/// here once, on each operation's 401 and 503, rather than on each handler.
struct ErrorHeaders;

impl Modify for ErrorHeaders {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::{ObjectBuilder, RefOr, Type};

        let header = |kind: Type, description: &str| {
            HeaderBuilder::new()
                .schema(Some(ObjectBuilder::new().schema_type(kind).build()))
                .description(Some(description))
                .build()
        };
        let declared = [
            (
                "401",
                "WWW-Authenticate",
                header(Type::String, "`Bearer realm=\"redis-gateway\"`"),
            ),
            (
                "503",
                "Retry-After",
                header(
                    Type::Integer,
                    "`1`: the store could not be reached or did not answer in time, or the \
                     request passed its own timeout (a second is about how long a Cluster \
                     failover takes)",
                ),
            ),
        ];
        for item in openapi.paths.paths.values_mut() {
            for (_, operation) in operations(item) {
                let Some(operation) = operation else { continue };
                for (status, name, header) in &declared {
                    if let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status)
                    {
                        response
                            .headers
                            .insert((*name).to_owned(), header.clone().into());
                    }
                }
            }
        }
    }
}

/// Writes `x-ratelimit-policies` on every operation that limit policies of `table` cover: the
/// names of the policies that can apply to it (docs/policies.md). Served on `/openapi.json`
/// for the file in force at start-up; the committed document is generated without a file.
pub fn with_policies(document: &mut utoipa::openapi::OpenApi, table: &crate::policies::Table) {
    if table.policies.is_empty() {
        return;
    }
    for item in document.paths.paths.values_mut() {
        for (_, operation) in operations(item) {
            let Some(operation) = operation.as_mut() else {
                continue;
            };
            let Some(id) = operation.operation_id.as_deref() else {
                continue;
            };
            let names = table.for_operation(id);
            if names.is_empty() {
                continue;
            }
            operation
                .extensions
                .get_or_insert_with(Default::default)
                .merge(
                    utoipa::openapi::extensions::ExtensionsBuilder::new()
                        .add("x-ratelimit-policies", names)
                        .build(),
                );
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
