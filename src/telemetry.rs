//! Structured logging (`RUST_LOG` filters, default `info`; text or JSON lines), OpenTelemetry
//! traces over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and the Prometheus metrics
//! recorder.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::LogFormat;

pub mod access;
mod batched;

/// Keeps the log writer and the trace exporter alive; dropping it (at the end of `main`) flushes
/// the lines and spans still buffered.
#[must_use = "dropping it stops the log writer"]
pub struct Telemetry {
    _log_writer: batched::FlushGuard,
    traces: Option<SdkTracerProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.traces.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.traces.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the global `tracing` subscriber: log lines as `format` on stdout, and spans to an
/// OTLP/HTTP collector when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME` names the
/// service, default `redis-gateway`).
///
/// Lines go through a batching writer thread ([`batched`]): with an access line per request,
/// writing to stdout from the request's own thread cost a system call and a lock per request
/// (measured with bench/ab.py: 0.81× the throughput of the access log off), and a writer
/// thread woken per line still cost a wake-up and a write per request. Past its buffer the
/// writer drops lines (and says how many) rather than stall requests.
pub fn init(format: LogFormat) -> Telemetry {
    let (writer, guard) = batched::batched(std::io::stdout());
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal: a log shipper stores the escape codes, and
    // painting them cost CPU on every access line.
    let ansi = std::io::stdout().is_terminal();
    if !(ansi && format == LogFormat::Text) {
        // Asked of the log filter alone, once: the trace exporter below keeps INFO spans
        // whatever RUST_LOG says, so the installed subscriber would answer yes for it.
        let probe = tracing_subscriber::registry().with(filter());
        let enabled = tracing::subscriber::with_default(
            probe,
            || tracing::enabled!(target: "access", tracing::Level::INFO),
        );
        access::install(writer.clone(), format == LogFormat::Json, enabled);
    }
    let logs = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(writer)
            .boxed(),
        // One JSON object per line, the event's fields flattened to the top level, so log
        // pipelines index `status` or `route` without unwrapping; the target tells access lines
        // (`access`) from the rest.
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
    };
    let traces = otlp_provider();
    let otel = traces.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("redis-gateway"))
            // The request and store spans, whatever RUST_LOG says about log lines.
            .with_filter(EnvFilter::new("info"))
    });
    let _ = tracing_subscriber::registry()
        .with(logs.with_filter(filter()))
        .with(otel)
        .try_init();
    if traces.is_some() {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let _ = TRACING.set(true);
        tracing::info!("sending traces over OTLP to OTEL_EXPORTER_OTLP_ENDPOINT");
    }
    Telemetry {
        _log_writer: guard,
        traces,
    }
}

static TRACING: OnceLock<bool> = OnceLock::new();

/// Whether spans are exported (OTLP configured): the request path only does the per-request
/// trace work (`traceparent`, trace ids, store-call spans) then.
pub fn tracing_on() -> bool {
    TRACING.get().copied().unwrap_or(false)
}

/// The OTLP/HTTP exporter when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` is set; the exporter
/// reads the endpoint and headers from the standard variables itself.
fn otlp_provider() -> Option<SdkTracerProvider> {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok()?;
    if endpoint.trim().is_empty() {
        return None;
    }
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("OTEL_EXPORTER_OTLP_ENDPOINT is set but no exporter could be built: {e}");
            return None;
        }
    };
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "redis-gateway".to_owned());
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build(),
    )
}

/// The trace id of the current span, when traces are on: echoed in problem documents and the
/// access log so a failure report leads to its trace.
pub fn current_trace_id() -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if !tracing_on() {
        return None;
    }
    let context = tracing::Span::current().context();
    let span = context.span();
    let id = span.span_context().trace_id();
    (id != opentelemetry::trace::TraceId::INVALID).then(|| id.to_string())
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
    metrics::describe_histogram!(
        "gateway_store_call_duration_seconds",
        metrics::Unit::Seconds,
        "Store call latency by operation (e.g. uv.record)"
    );
    metrics::describe_counter!(
        "gateway_store_errors_total",
        "Failed store calls by kind (timeout, unavailable, internal)"
    );
    metrics::describe_gauge!(
        "gateway_http_requests_in_flight",
        "HTTP requests being answered now"
    );
    metrics::describe_gauge!(
        "gateway_event_streams_open",
        "Server-sent event streams open now"
    );
    metrics::describe_gauge!(
        "gateway_event_feeds",
        "Live feeds running by kind of resource, one store subscription each"
    );
    metrics::describe_gauge!(
        "gateway_store_up",
        "1 when the store answered the last probe (at most one a second), else 0"
    );
    metrics::describe_gauge!(
        "gateway_info",
        "Always 1; its labels name the backend and the Bloom engine in use"
    );
    metrics::describe_counter!(
        "gateway_limiter_decisions_total",
        "Rate-limiter decisions by policy, outcome and client"
    );
    metrics::describe_counter!(
        "gateway_limiter_shadow_refusals_total",
        "Requests a limiter in shadow mode would have refused"
    );
    metrics::describe_gauge!(
        "gateway_redis_node_up",
        "1 while a Redis Cluster master is serving its slots, else 0"
    );
    metrics::describe_counter!(
        "gateway_replica_waits_total",
        "Waits for replicas to hold a lasting write (GATEWAY_WRITE_REPLICAS), by outcome"
    );
    metrics::describe_histogram!(
        "gateway_replica_wait_duration_seconds",
        metrics::Unit::Seconds,
        "Time lasting writes waited for their replicas"
    );
}
