//! The check-in settings: flags and environment ([`Flags`], pulled into the binary's command)
//! and what the routes run on ([`Settings`]).

use crate::config::{parse, DomainFlags, Invalid};

/// The check-in part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// How many days check-ins are kept (older dates are refused with 422).
    #[arg(
        long,
        env = "GATEWAY_CHECKIN_RETENTION_DAYS",
        default_value_t = 400,
        value_parser = parse::within::<u32>(1, 3660)
    )]
    pub checkin_retention_days: u32,
}

/// Validated check-in settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_CHECKIN_RETENTION_DAYS`.
    pub retention_days: u32,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The parser already holds the range: nothing is left to refuse.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            retention_days: self.checkin_retention_days,
        })
    }
}
