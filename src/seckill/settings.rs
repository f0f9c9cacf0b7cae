//! The flash-sale settings: flags and environment ([`Flags`], pulled into the binary's
//! command) and what the routes run on ([`Settings`]).

use crate::config::{parse, DomainFlags, Invalid};

/// The flash-sale part of the command line and environment.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct Flags {
    /// Cap of each voucher's order stream; a voucher's stock may never exceed it.
    #[arg(
        long,
        env = "GATEWAY_SECKILL_MAX_ORDERS",
        default_value_t = 1_000_000,
        value_parser = parse::at_least::<u64>(1)
    )]
    pub seckill_max_orders: u64,
}

/// Validated flash-sale settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `GATEWAY_SECKILL_MAX_ORDERS`.
    pub max_orders: u64,
}

impl DomainFlags for Flags {
    type Settings = Settings;

    /// The parser already holds the range: nothing is left to refuse.
    fn settings(&self) -> Result<Settings, Invalid> {
        Ok(Settings {
            max_orders: self.seckill_max_orders,
        })
    }
}
