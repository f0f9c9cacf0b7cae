//! What every request leaves behind: counts, latency and in-flight requests per route template
//! (never per raw path or raw method: bounded label sets), and the access log line.

use std::sync::{Arc, LazyLock, PoisonError, RwLock};
use std::time::Instant;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method};
use axum::response::Response;
use tower::{Layer, Service};
use tracing::Instrument;

use super::FastMap;
use crate::telemetry::access;

/// The outermost layer, in one service: the request id (the client's when it is a plain
/// token, else a new UUID) on the request and its response, the request span, and
/// [`record`]. Written by hand instead of tower-http's request-id, propagate and trace layers
/// plus an axum `from_fn`: each of those wrapped or boxed the request's future once more, and
/// together they were a third of `GET /healthz`'s CPU (bench/ab.py).
/// Who the global limiter charged and what it decided, left in the response's extensions for
/// the access log (the limiter is the policies' layer; this module only reads the note).
#[derive(Debug, Clone)]
pub struct LimiterNote {
    pub client: String,
    pub outcome: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct ObserveLayer {
    /// Whether to write the per-request INFO line (`GATEWAY_ACCESS_LOG`).
    pub access_log: bool,
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observe {
            inner,
            access_log: self.access_log,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Observe<S> {
    inner: S,
    access_log: bool,
}

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's id, set on the request: the client's own when it is a plain token (letters,
/// digits and `-_.:`, at most 128 bytes), else a new UUID. The id goes unquoted into the text
/// access line and into every log line of the request, where a value with spaces could forge
/// fields (`abc status=200`).
fn request_id(req: &mut Request) -> HeaderValue {
    let plain = |v: &HeaderValue| {
        let b = v.as_bytes();
        !b.is_empty()
            && b.len() <= 128
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || b"-_.:".contains(c))
    };
    if let Some(id) = req.headers().get(X_REQUEST_ID).filter(|v| plain(v)) {
        return id.clone();
    }
    let mut buf = uuid::Uuid::encode_buffer();
    let id = HeaderValue::from_str(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buf))
        .expect("a UUID is a valid header value");
    req.headers_mut().insert(X_REQUEST_ID, id.clone());
    id
}

impl<S> Service<Request> for Observe<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request) -> Self::Future {
        let id = request_id(&mut req);
        // Plain ASCII by construction (see `request_id`).
        let span = super::request_span(&req, id.to_str().unwrap_or("-"));
        let seen = Seen {
            access_log: self.access_log,
            // A clone of the matched path is a reference count, not a copy of the string.
            matched: req.extensions().get::<MatchedPath>().cloned(),
            method: method_label(req.method()),
            started: Instant::now(),
            in_flight: InFlight::enter(),
            id,
        };
        // The inner service is called here, not inside the future: the future then owns
        // only the inner's future, where it owned a clone of the whole inner stack (each
        // request cloned every layer below and the boxed route).
        let pending = {
            let _inside = span.enter();
            self.inner.call(req)
        };
        let work = record(seen, pending);
        if span.is_disabled() {
            Box::pin(work)
        } else {
            Box::pin(work.instrument(span))
        }
    }
}

/// What `Observe` noted of a request before calling the inner service.
struct Seen {
    access_log: bool,
    matched: Option<MatchedPath>,
    method: &'static str,
    started: Instant,
    /// Counts the request in flight until it is answered or dropped.
    in_flight: InFlight,
    id: HeaderValue,
}

/// Awaits the response, then counts the request, times it, writes its access line, turns an
/// error response that is not yet problem+json into one, and sets `x-request-id` on it.
async fn record<F>(seen: Seen, pending: F) -> Result<Response, Infallible>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    let Seen {
        access_log,
        matched,
        method,
        started,
        in_flight,
        id,
    } = seen;
    let route = matched.as_ref().map_or("unmatched", MatchedPath::as_str);
    // Plain ASCII by construction (see `request_id`).
    let request_id = id.to_str().unwrap_or("-");
    let trace_id = access_log
        .then(crate::telemetry::current_trace_id)
        .flatten();
    let response = match pending.await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    drop(in_flight);
    let origin = super::problems::Origin {
        method,
        route,
        request_id,
    };
    let mut response = super::problems::as_problem(response, &origin);
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    if access_log {
        let note = response.extensions().get::<LimiterNote>();
        let line = access::Line {
            method,
            route,
            status,
            latency: elapsed,
            request_id,
            client: note.map_or("-", |n| n.client.as_str()),
            limiter: note.map_or("-", |n| n.outcome),
            trace_id: trace_id.as_deref().unwrap_or("-"),
        };
        if !access::write(&line) {
            // Outside the request span (`parent: None`): the line carries every field itself,
            // so it reads the same in text and JSON and is not prefixed with the span's copy.
            tracing::info!(
                target: "access",
                parent: None,
                method,
                route = %route,
                status,
                latency_ms = elapsed.as_secs_f64() * 1e3,
                request_id = %request_id,
                client = line.client,
                limiter = line.limiter,
                trace_id = line.trace_id,
                "request"
            );
        }
    }
    let handles = RouteMetrics::of(route, method);
    handles.duration.record(elapsed.as_secs_f64());
    handles.requests(status).increment(1);
    response.headers_mut().entry(X_REQUEST_ID).or_insert(id);
    Ok(response)
}

/// The metric handles of one route template and method, resolved once. Through the `metrics!`
/// macros every request built and hashed a labelled key and allocated its label strings;
/// a handle records straight into its series. Bounded like the labels: route
/// templates × standard methods × status codes.
struct RouteMetrics {
    route: Arc<str>,
    method: &'static str,
    duration: metrics::Histogram,
    by_status: RwLock<FastMap<u16, metrics::Counter>>,
}

type ByMethod = FastMap<&'static str, FastMap<Arc<str>, Arc<RouteMetrics>>>;

impl RouteMetrics {
    fn of(route: &str, method: &'static str) -> Arc<Self> {
        static ALL: LazyLock<RwLock<ByMethod>> = LazyLock::new(RwLock::default);
        if let Some(found) = ALL
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(method)
            .and_then(|routes| routes.get(route))
        {
            return found.clone();
        }
        let route: Arc<str> = route.into();
        let made = Arc::new(Self {
            duration: metrics::histogram!("gateway_http_request_duration_seconds", "route" => route.to_string(), "method" => method),
            route: route.clone(),
            method,
            by_status: RwLock::default(),
        });
        ALL.write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(method)
            .or_default()
            .entry(route)
            .or_insert(made)
            .clone()
    }

    fn requests(&self, status: u16) -> metrics::Counter {
        if let Some(counter) = self
            .by_status
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&status)
        {
            return counter.clone();
        }
        self.by_status
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(status)
            .or_insert_with(|| {
                metrics::counter!("gateway_http_requests_total", "route" => self.route.to_string(), "method" => self.method, "status" => status.to_string())
            })
            .clone()
    }
}

/// `gateway_http_requests_in_flight`, resolved once (see [`RouteMetrics`]).
fn in_flight() -> &'static metrics::Gauge {
    static GAUGE: LazyLock<metrics::Gauge> =
        LazyLock::new(|| metrics::gauge!("gateway_http_requests_in_flight"));
    &GAUGE
}

/// Counts a request in `gateway_http_requests_in_flight` until dropped, which also happens
/// when the client goes away mid-request and the handler's future is dropped.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        in_flight().increment(1.0);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        in_flight().decrement(1.0);
    }
}

/// The method as a label. A client may send any token as a method (`curl -X M1`, `-X M2`, …),
/// and every label value is a series the recorder keeps for the life of the process, so
/// methods outside the standard set share one label.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}
