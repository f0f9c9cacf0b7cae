//! The unique-visitor settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the routes run on ([`Settings`]).

use crate::config::{parse, secret, DomainFlags, Invalid, Secret, SECRET_BYTES};

/// The unique-visitor part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Secret visitor ids are hashed with before they are counted (at least 16 bytes; every
    /// gateway on one store must be given the same). Unset: one is generated and kept in the
    /// store, shared by every gateway that uses it.
    #[arg(long, env = "GATEWAY_UV_VISITOR_KEY", hide_env_values = true)]
    pub uv_visitor_key: Option<String>,

    /// How many days per-day UV/PV keys are kept.
    #[arg(
        long,
        env = "GATEWAY_UV_RETENTION_DAYS",
        default_value_t = 400,
        value_parser = parse::within::<u32>(1, 3660)
    )]
    pub uv_retention_days: u32,
}

/// Validated unique-visitor settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_UV_RETENTION_DAYS`.
    pub retention_days: u32,
    /// `GATEWAY_UV_VISITOR_KEY` (`None`: the store keeps one).
    pub visitor_key: Option<Secret>,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// Checks the visitor key the way every secret setting is checked.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            retention_days: self.uv_retention_days,
            visitor_key: secret(
                "GATEWAY_UV_VISITOR_KEY",
                self.uv_visitor_key.as_deref(),
                SECRET_BYTES,
                "for one kept in the store",
            )?,
        })
    }
}
