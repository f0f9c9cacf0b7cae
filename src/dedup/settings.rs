//! The dedup settings: flags and environment ([`Flags`], pulled into the binary's command)
//! and what the routes run on ([`Settings`]).

use super::logic::Params;
use crate::config::{parse, DomainFlags, Invalid};

/// The dedup part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Capacity of a dedup filter created on first use (its first layer; it grows from there).
    // Small: any caller can create a filter by naming a new one, and the first layer is
    // allocated whole (~380 B at 300 items and 1% on Lua, ~570 B as a RedisBloom filter, which
    // reserves its first layer at half the rate; against ~120 KB at 100,000): with its metadata
    // a new filter stays under the 1,491 B a limiter unit may add on either engine
    // (docs/performance.md "Abuse budget"; 500 put RedisBloom's at 1,635 B). The filter adds
    // layers as it fills, keeping the error rate.
    #[arg(
        long,
        env = "GATEWAY_DEDUP_CAPACITY",
        default_value_t = 300,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub dedup_capacity: u64,

    /// Error rate of a dedup filter created on first use.
    #[arg(
        long,
        env = "GATEWAY_DEDUP_ERROR_RATE",
        default_value_t = 0.01,
        value_parser = parse::rate
    )]
    pub dedup_error_rate: f64,

    /// Days an idle dedup filter is kept.
    #[arg(
        long,
        env = "GATEWAY_DEDUP_RETENTION_DAYS",
        default_value_t = 30,
        value_parser = parse::at_least::<u32>(1)
    )]
    pub dedup_retention_days: u32,
}

/// Validated dedup settings: the filter a first use creates, and how long an idle one is kept.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_DEDUP_CAPACITY`.
    pub capacity: u64,
    /// `GATEWAY_DEDUP_ERROR_RATE`.
    pub error_rate: f64,
    /// `GATEWAY_DEDUP_RETENTION_DAYS`.
    pub retention_days: u32,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The ranges are the parsers'; whether the two make a filter is checked here
    /// ([`check_settings`]).
    fn settings(&self) -> Result<Settings, Invalid> {
        let settings = Settings {
            capacity: self.dedup_capacity,
            error_rate: self.dedup_error_rate,
            retention_days: self.dedup_retention_days,
        };
        check_settings(&settings)?;
        Ok(settings)
    }
}

/// The configured default filter must be one the gateway can build (its first layer within
/// bounds): refused at start-up, naming the settings.
fn check_settings(settings: &Settings) -> Result<(), crate::config::Invalid> {
    // The rate first, with the smallest capacity, so that each refusal names the one setting
    // at fault: a rate out of bounds is wrong at any capacity.
    Params::new(1, settings.error_rate).map_err(|e| {
        Invalid::new(
            "GATEWAY_DEDUP_ERROR_RATE",
            e,
            "write a rate from 1e-12 to below 1, e.g. 0.01 (the default)",
        )
    })?;
    Params::new(settings.capacity, settings.error_rate)
        .map(drop)
        .map_err(|e| {
            Invalid::new(
                "GATEWAY_DEDUP_CAPACITY",
                e,
                "write a smaller first layer (a filter grows by layers as it fills), e.g. 500 \
                 (the default)",
            )
        })
}
