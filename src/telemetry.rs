//! Structured logging set-up (`RUST_LOG` filters, default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the global `tracing` subscriber; a second call is a no-op so tests may call it freely.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .try_init();
}
