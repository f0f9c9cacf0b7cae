//! Operational routes, exempt from the global limiter: liveness, readiness, metrics.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    status: &'static str,
}

/// 200 while the process runs.
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `memory`, `redis` or `redis-cluster`.
    backend: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    redis_version: Option<String>,
    /// `redisbloom`, `lua` or `memory`.
    bloom_engine: &'static str,
    /// The order ledger's state and lag (`state: off` without `DATABASE_URL`).
    ledger: crate::ledger::LedgerStatus,
}

/// 200 when the store answers, else 503 `backend_unavailable`.
async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Ready>> {
    let info = state.store.ready().await?;
    Ok(Json(Ready {
        backend: info.backend,
        redis_version: info.redis_version,
        bloom_engine: info.bloom_engine,
        ledger: state.ledger.status(),
    }))
}

/// Prometheus text exposition of every metric the process records. Each scrape also asks the
/// store whether it answers (`gateway_store_up`) and which Bloom engine it offers.
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    match state.store.ready().await {
        Ok(info) => {
            metrics::gauge!("gateway_store_up").set(1.0);
            metrics::gauge!("gateway_info", "backend" => info.backend, "bloom_engine" => info.bloom_engine).set(1.0);
        }
        Err(_) => metrics::gauge!("gateway_store_up").set(0.0),
    }
    crate::telemetry::process().collect();
    let body = crate::telemetry::metrics()
        .map(|h| h.render())
        .unwrap_or_default();
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
}
