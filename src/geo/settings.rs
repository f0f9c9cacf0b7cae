//! The geo settings: flags and environment ([`Flags`], pulled into the binary's command) and
//! what the routes run on ([`Settings`]).

use crate::config::{parse, DomainFlags, Invalid};

/// The geo part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Most places one geo layer holds; a write that would pass it is `409 layer_full`.
    #[arg(
        long,
        env = "GATEWAY_GEO_MAX_PLACES",
        default_value_t = 100_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub geo_max_places: u64,

    /// Days a geo layer is kept after its last write.
    #[arg(
        long,
        env = "GATEWAY_GEO_RETENTION_DAYS",
        default_value_t = 400,
        value_parser = parse::at_least::<u32>(1)
    )]
    pub geo_retention_days: u32,
}

/// Validated geo settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_GEO_MAX_PLACES`.
    pub max_places: u64,
    /// `GATEWAY_GEO_RETENTION_DAYS`.
    pub retention_days: u32,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The parser already holds the ranges: nothing is left to refuse.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            max_places: self.geo_max_places,
            retention_days: self.geo_retention_days,
        })
    }
}
