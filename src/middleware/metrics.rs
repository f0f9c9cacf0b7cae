//! Request counts and latency per route template (never per raw path: bounded label sets).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;

pub async fn record(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(req.method());
    let started = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!("gateway_http_request_duration_seconds", "route" => route.clone(), "method" => method)
        .record(started.elapsed().as_secs_f64());
    metrics::counter!("gateway_http_requests_total", "route" => route, "method" => method, "status" => status).increment(1);
    response
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
