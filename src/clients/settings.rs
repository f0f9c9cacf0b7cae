//! The API clients' settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what identifying callers runs on ([`Settings`]).

use std::path::PathBuf;

use crate::config::{DomainFlags, Invalid, OnOff};

/// The API clients' part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// TOML file of API clients (id, SHA-256 of the key, optional burst/count/period). Unset:
    /// no API clients, every caller is limited by its address and any X-Api-Key is refused.
    #[arg(long, env = "GATEWAY_CLIENTS_FILE")]
    pub clients_file: Option<PathBuf>,

    /// With a clients file: whether callers without an API key may use rate-limit checks,
    /// locks and queues (each address then has a namespace of its own). Off: those routes
    /// answer 401 without a key.
    #[arg(long, env = "GATEWAY_ANONYMOUS_BACKEND_ROUTES", default_value = "off")]
    pub anonymous_backend_routes: OnOff,
}

/// Validated API clients' settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_CLIENTS_FILE` (read at start-up, `Clients::load`).
    pub file: Option<PathBuf>,
    /// With a clients file, anonymous callers may use rate-limit checks, locks and queues.
    pub anonymous_backend_routes: bool,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The file is read when the state is built, so nothing is refused here.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            file: self.clients_file.clone(),
            anonymous_backend_routes: self.anonymous_backend_routes == OnOff::On,
        })
    }
}
