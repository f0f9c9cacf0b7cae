//! The sub-commands of the binary and the switches among its settings (`OnOff` and the
//! modes), each a closed set of values clap checks.

use clap::{Subcommand, ValueEnum};

/// Sub-commands of the binary.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Print the OpenAPI document and exit.
    Openapi,
    /// Ask the gateway at GATEWAY_LISTEN for /healthz; exit 0 on 200, else 1 (container
    /// health checks).
    Healthcheck,
}

/// An on/off switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// The global limiter's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LimitMode {
    On,
    Off,
    /// Every decision made and its headers sent, nothing refused: for rolling the limiter out.
    Shadow,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// What the global limiter does when it cannot reach the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailPolicy {
    /// Serve the request (and count it).
    Open,
    /// Refuse with 503.
    Closed,
}
