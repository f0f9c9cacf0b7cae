//! The limit policies' settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the policies are loaded from ([`Settings`]).

use crate::config::{DomainFlags, Invalid};

use std::path::PathBuf;

/// The limit policies' part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// TOML file of limit policies stacked on the global limiter (per operation, counted per
    /// client, address, user, header or operation). Unset: the global limiter alone.
    #[arg(long, env = "GATEWAY_POLICIES_FILE")]
    pub policies_file: Option<PathBuf>,
}

/// Validated limit policies' settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_POLICIES_FILE` (read at start-up, `Policies::load`).
    pub file: Option<PathBuf>,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The file is read when the state is built, so nothing is refused here.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            file: self.policies_file.clone(),
        })
    }
}
