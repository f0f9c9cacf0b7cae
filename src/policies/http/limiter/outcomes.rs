//! A metrics recorder for tests that counts `gateway_limiter_decisions_total` by outcome.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts `gateway_limiter_decisions_total` by outcome.
#[derive(Debug, Default)]
pub(super) struct Outcomes(std::sync::Mutex<std::collections::HashMap<String, Arc<AtomicU64>>>);

impl Outcomes {
    pub(super) fn get(&self, outcome: &str) -> u64 {
        let counts = self.0.lock().unwrap();
        counts.get(outcome).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl metrics::Recorder for Outcomes {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        // Store errors are counted too (by the store layer); only decisions matter here.
        if key.name() != "gateway_limiter_decisions_total" {
            return metrics::Counter::noop();
        }
        let outcome = key
            .labels()
            .find(|l| l.key() == "outcome")
            .map(|l| l.value().to_owned())
            .unwrap_or_default();
        let counter = self.0.lock().unwrap().entry(outcome).or_default().clone();
        metrics::Counter::from_arc(counter)
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}
