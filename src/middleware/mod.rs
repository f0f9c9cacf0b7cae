//! The one middleware stack every request goes through, outermost first:
//!
//! 1. [`observe`], in one service: set `x-request-id` (a UUID unless the client sent a plain
//!    one: letters, digits, `-_.:`, at most 128 bytes) on the request and its response; a
//!    span per request carrying the request id and the matched route (recorded under
//!    `RUST_LOG=debug` or with traces exported); count the request, its
//!    latency and requests in flight per route template (Prometheus), write the access log
//!    line, and turn any error response that is not yet problem+json
//!    (405s, 404s, timeouts) into one, logging 5xx errors with the request's id and route
//! 2. compress large replies as the client's `Accept-Encoding` allows (gzip, brotli, zstd)
//! 3. a panicking handler answers 500 `internal`
//! 4. CORS (only when origins are configured)
//! 5. request timeout ([`timeout`]: 503, or 408 for a body that stopped arriving; 414 for a
//!    request target over 16 KiB) and the body-size limit
//! 6. the layers the composition puts innermost (`lib.rs` gives the API routes the caller's
//!    identity and the global limiter, the ops routes nothing, so `/healthz`, `/readyz` and
//!    `/metrics` are never limited). Inside CORS, so 429s carry CORS headers and preflights are
//!    not counted; inside the timeout, so a slow store or a stalled body cannot hold a request
//!    past it. This module names none of them: it takes them as one [`Layer`]. Outermost of
//!    those on the API routes, [`StartupGateLayer`]: while the store has not been reached
//!    since start-up, an operation's 503 `backend_unavailable` at once, before anyone is
//!    charged; 429s and 503s carry CORS headers.

mod compress;
pub mod costs;
mod maybe;
mod observe;
mod problems;
mod startup;
mod timeout;

use std::time::Duration;

/// The per-request lookup maps of the middleware (metric handles by route and status, limiter
/// counters, a worker's open limiter batches). Their keys are few and the server's own (route
/// templates, status codes, configured client ids) or live for one turn of a worker's event
/// loop (a batch's client), so std's SipHash, built to resist flooding a long-lived map with
/// chosen keys, only cost time: foldhash, seeded per process, hashes them in a fraction of it
/// (three to six lookups per request).
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method};
use std::convert::Infallible;

use axum::response::Response;
use axum::routing::Route;
use axum::Router;
use tower::{Layer, Service, ServiceBuilder};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};

pub use maybe::Maybe;
pub use observe::LimiterNote;
pub use startup::{Operations, StartupGateLayer};

use crate::config::Common;

/// Wraps `router` in the stack described in the module docs, in one `Router::layer` call:
/// each call boxes every route once more, and a request then clones each box.
///
/// `terms` are the routes' own declarations (cost, long-poll wait) and `inner` the layers the
/// composition puts innermost, both put together where the app is composed: this module
/// names no route and no domain.
pub fn stack<S, L>(
    router: Router<S>,
    settings: &Common,
    terms: &'static costs::Terms,
    inner: L,
) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    L: Layer<Route> + Clone + Send + Sync + 'static,
    L::Service:
        Service<Request, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    <L::Service as Service<Request>>::Future: Send + 'static,
{
    router.layer(
        ServiceBuilder::new()
            .layer(observe::ObserveLayer {
                access_log: settings.access_log,
            })
            .layer(compression())
            .layer(CatchPanicLayer::custom(problems::panic_response))
            .layer(Maybe(cors(&settings.cors_origins)))
            .layer(timeout::RequestTimeoutLayer {
                budget: settings.request_timeout,
                terms,
            })
            .layer(DefaultBodyLimit::max(settings.body_limit))
            .layer(inner),
    )
}

/// The span every request runs in. With traces exported it continues the caller's W3C
/// `traceparent` and carries the trace id, so log lines and problem documents name the trace.
pub(crate) fn request_span(req: &Request, request_id: &str) -> tracing::Span {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("-", MatchedPath::as_str);
    // Recorded only when someone reads it: exported as a trace, or logged under
    // `RUST_LOG=debug`. At the default INFO a span per request, its fields formatted into the
    // log layer's storage and entered on every poll, was an eighth of a `GET /healthz`'s
    // instructions (callgrind); the lines a request logs at INFO (its access line,
    // the error of a failed one) carry its id, method and route themselves.
    if !crate::telemetry::tracing_on() {
        return tracing::debug_span!(
            "request",
            method = %req.method(),
            path = %req.uri().path(),
            route,
            request_id,
        );
    }
    let span = tracing::info_span!(
        "request",
        method = %req.method(),
        path = %req.uri().path(),
        route,
        request_id,
        trace_id = tracing::field::Empty,
        otel.name = tracing::field::Empty,
    );
    let parent = opentelemetry::global::get_text_map_propagator(|p| {
        p.extract(&opentelemetry_http::HeaderExtractor(req.headers()))
    });
    let _ = span.set_parent(parent);
    span.record("otel.name", format!("{} {route}", req.method()));
    let trace_id = span.context().span().span_context().trace_id();
    span.record("trace_id", tracing::field::display(trace_id));
    span
}

/// Replies above 1 KiB compressed for clients that ask (batch checks, nearby results and UV
/// listings reach tens of KiB of JSON; mobile clients pay for every byte). Small replies stay
/// plain: below a packet or two, compression costs more CPU than it saves time.
fn compression() -> compress::AskedCompressionLayer<impl Predicate> {
    compress::AskedCompressionLayer::new(
        CompressionLayer::new()
            .gzip(true)
            .br(true)
            .zstd(true)
            .compress_when(
                SizeAbove::new(1024)
                    .and(NotForContentType::GRPC)
                    .and(NotForContentType::IMAGES)
                    .and(NotForContentType::SSE),
            ),
    )
}

/// Request headers the API reads (docs/api.md): a browser's preflight must allow each, or a
/// page that sends one (an `Idempotency-Key` on a purchase) gets no answer at all.
/// `traceparent` / `tracestate` continue the caller's trace (see [`request_span`]).
const CORS_REQUEST_HEADERS: [&str; 8] = [
    "content-type",
    "authorization",
    "x-api-key",
    "x-request-id",
    "idempotency-key",
    "traceparent",
    "tracestate",
    // EventSource sends it when it reconnects a stream (docs/api.md "Events").
    "last-event-id",
];

/// Response headers the API writes (docs/api.md): scripts read only the ones listed, so a page
/// could not tell a replayed purchase or its remaining budget without them.
const CORS_RESPONSE_HEADERS: [&str; 8] = [
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "x-request-id",
    "idempotency-replayed",
];

/// CORS for browsers calling the gateway directly: every header the API defines usable by
/// scripts (docs/configuration.md lists them).
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::DELETE,
                Method::OPTIONS,
            ])
            .allow_headers(CORS_REQUEST_HEADERS.map(HeaderName::from_static))
            .expose_headers(CORS_RESPONSE_HEADERS.map(HeaderName::from_static))
            .max_age(Duration::from_secs(600)),
    )
}
