//! The order ledger's settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the ledger runs on ([`Settings`]).

use std::time::Duration;

use crate::config::{database_url, parse, DomainFlags, Invalid};

/// The ledger part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// PostgreSQL of the order ledger (postgres://...). Unset: the ledger is off.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// Ledger: milliseconds an order entry may stay unacknowledged before another ingester
    /// takes it over (a crashed instance's, or a failed attempt's).
    #[arg(
        long,
        env = "GATEWAY_LEDGER_CLAIM_IDLE_MS",
        default_value_t = 30_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub ledger_claim_idle_ms: u64,
}

/// Validated ledger settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `None`: the order ledger is off.
    pub database_url: Option<String>,
    /// `GATEWAY_LEDGER_CLAIM_IDLE_MS`.
    pub claim_idle: Duration,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// Checks the database URL (an empty one means unset).
    fn settings(&self) -> Result<Settings, Invalid> {
        let database_url = match self.database_url.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(url) => database_url(url).map(|()| Some(url.to_owned()))?,
        };
        Ok(Settings {
            database_url,
            claim_idle: Duration::from_millis(self.ledger_claim_idle_ms),
        })
    }
}
