//! The rate-limit check settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the routes run on ([`Settings`]).

use crate::config::{parse, DomainFlags, Invalid};

/// The rate-limit part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// The longest a rate-limit check may make its key live, in seconds: a check whose full
    /// bucket (or window) lasts longer is 400.
    #[arg(
        long,
        env = "GATEWAY_RATELIMIT_MAX_TTL_S",
        default_value_t = 86_400,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub ratelimit_max_ttl_s: u64,
}

/// Validated rate-limit settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_RATELIMIT_MAX_TTL_S`.
    pub max_ttl_s: u64,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The parser already holds the range: nothing is left to refuse.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            max_ttl_s: self.ratelimit_max_ttl_s,
        })
    }
}
