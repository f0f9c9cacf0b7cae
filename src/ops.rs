//! Operational routes, exempt from the global limiter: liveness, readiness, metrics.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiResult;
use crate::state::AppState;

/// The ops routes with their documentation (tag `ops`; never limited, so no 429).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    status: &'static str,
}

/// 200 while the process runs (never touches the store): for liveness probes.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "ops",
    responses((status = 200, body = Health))
)]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `memory`, `redis` or `redis-cluster`.
    backend: &'static str,
    /// Redis only: the server (`redis` or `valkey`), its own version and its modules.
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<crate::store::ServerInfo>,
    /// Redis only: the Redis version the server reports (Valkey reports the one it is
    /// compatible with; `server` has its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    redis_version: Option<String>,
    /// `redisbloom`, `lua` or `memory`.
    bloom_engine: &'static str,
    /// The order ledger's state and lag (`state: off` without `DATABASE_URL`).
    ledger: crate::ledger::LedgerStatus,
    /// Redis Cluster only, and only while some master does not serve: the nodes down and the
    /// slot ranges they own. The instance stays ready while any master serves; requests for
    /// keys in these slots answer 503 `backend_unavailable` with `Retry-After`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    degraded: Vec<crate::store::DownNode>,
    /// Redis only: `GATEWAY_WRITE_REPLICAS`, its timeout, and (when above 0) each master's
    /// replicas (`degraded` while a master has fewer than required: lasting writes to its slots
    /// answer 503). From the probe, at most a second old.
    #[serde(skip_serializing_if = "Option::is_none")]
    write_replicas: Option<crate::store::WriteReplicasInfo>,
}

/// 200 when the store answers (on a Cluster: while any master serves, naming the ones down in
/// `degraded`), else 503 `backend_unavailable`: for readiness probes and load balancers. Never
/// shows raw error texts. The store is probed at most once a second, however often this is
/// called: answers within the second repeat the last probe's (`degraded` is always current).
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "ops",
    responses(
        (status = 200, body = Ready),
        (status = 503, description = "`backend_unavailable`: the store cannot answer", body = crate::error::Problem, content_type = "application/problem+json"),
    )
)]
async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Ready>> {
    let info = probe(&state).await?;
    // Always reported: the composition gives the probe the dedup domain's fact.
    let bloom_engine = info.fact("bloom_engine").unwrap_or("unknown");
    Ok(Json(Ready {
        backend: info.store.backend,
        server: info.store.server,
        redis_version: info.store.redis_version,
        bloom_engine,
        ledger: state.part::<crate::ledger::Ledger>().status(),
        // The client's own view of the topology, no store call: shown as of now, so a load
        // balancer sees a master go down without waiting for the next probe.
        degraded: state.store.degraded(),
        write_replicas: info.store.write_replicas,
    }))
}

/// The shared store probe, once the store has been reached since start-up; before that, why
/// not at once, with no probe: its failure would be repeated for a second after the store
/// first answers, keeping a gateway that could serve out of its load balancer.
async fn probe(state: &AppState) -> Result<crate::readiness::Ready, crate::store::StoreError> {
    state.startup.check(&state.store)?;
    state.ready_probe.check(&state.store).await
}

const CPU_GAUGE: &str = "# TYPE process_cpu_seconds_total gauge";
const CPU_COUNTER: &str = "# TYPE process_cpu_seconds_total counter";

/// Prometheus text exposition of every metric the process records. Each scrape also reports
/// whether the store answers (`gateway_store_up`) and which Bloom engine it offers, from the
/// same probe as `/readyz` (at most one a second).
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "ops",
    responses((status = 200, description = "Prometheus text format 0.0.4", body = String, content_type = "text/plain"))
)]
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    match probe(&state).await {
        Ok(info) => {
            metrics::gauge!("gateway_store_up").set(1.0);
            let labels: Vec<metrics::Label> = std::iter::once(("backend", info.store.backend))
                .chain(info.facts.iter().copied())
                .map(|(k, v)| metrics::Label::new(k, v))
                .collect();
            metrics::gauge!("gateway_info", labels).set(1.0);
        }
        Err(_) => metrics::gauge!("gateway_store_up").set(0.0),
    }
    crate::telemetry::process().collect();
    let mut body = crate::telemetry::metrics()
        .map(|h| h.render())
        .unwrap_or_default();
    // CPU seconds only grow, so Prometheus wants them typed `counter` (and `promtool check
    // metrics` refuses a `_total` gauge); the collector records a gauge because a `metrics`
    // counter holds whole numbers, which read 0 until a full second of CPU was spent. The value
    // is the same either way: only its declared type is corrected, once per scrape.
    if let Some(at) = body.find(CPU_GAUGE) {
        body.replace_range(at..at + CPU_GAUGE.len(), CPU_COUNTER);
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        body,
    )
}
