//! Structured logging (`RUST_LOG` filters, default `info`; text or JSON lines) and the
//! Prometheus metrics recorder.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global `tracing` subscriber; a second call is a no-op so tests may call it freely.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        // One JSON object per line, the event's fields flattened to the top level, so log
        // pipelines index `status` or `route` without unwrapping; the target tells access lines
        // (`access`) from the rest.
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}

/// Latency buckets in seconds: fine-grained below 10 ms, where a healthy gateway lives.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide Prometheus recorder, installed on first use. The `metrics` recorder is global,
/// so every gateway built in one process (tests build many) shares it.
pub fn metrics() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), LATENCY_BUCKETS)
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    process().describe();
                    spawn_upkeep(handle.clone());
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// The standard `process_*` metrics (CPU seconds, resident memory, open file descriptors,
/// threads, start time), read from `/proc` at each scrape.
pub fn process() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

/// How often recorded histogram samples are folded into their buckets.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The recorder keeps every histogram sample until something drains it; only a scrape or an
/// upkeep does. `install_recorder` (unlike `install`, which also opens its own listener) runs
/// no upkeep, so without this a gateway nobody scrapes grows by ~8 bytes per sample, forever.
/// A plain thread, not a Tokio task: the recorder is process-wide and outlives any one runtime
/// (tests build many), and the work is a short lock-and-fold every few seconds.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("metrics-upkeep".to_owned())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            handle.run_upkeep();
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "metrics upkeep thread not started; histograms drain only on scrape");
    }
}

fn describe() {
    metrics::describe_counter!(
        "gateway_http_requests_total",
        "HTTP requests by route template, method and status"
    );
    metrics::describe_histogram!(
        "gateway_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "HTTP request latency by route template and method"
    );
    metrics::describe_counter!(
        "gateway_store_errors_total",
        "Failed store calls by kind (timeout, unavailable, internal)"
    );
}
