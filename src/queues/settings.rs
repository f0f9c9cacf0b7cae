//! The delayed-queue settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the routes run on ([`Settings`]).

use crate::config::{parse, DomainFlags, Invalid};

/// The delayed-queue part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Most live jobs (waiting or in flight) one delayed queue holds; enqueueing into a full
    /// queue is 409 queue_full.
    #[arg(
        long,
        env = "GATEWAY_QUEUE_MAX_JOBS",
        default_value_t = 100_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub queue_max_jobs: u64,
}

/// Validated delayed-queue settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_QUEUE_MAX_JOBS`.
    pub max_jobs: u64,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The parser already holds the range: nothing is left to refuse.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            max_jobs: self.queue_max_jobs,
        })
    }
}
