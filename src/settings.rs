//! The configuration put together: the shared settings (`config/`) and each domain's own
//! (`src/<domain>/settings.rs`) as one clap command, [`Config`], and one validated
//! [`Settings`]. A domain's settings are one `flatten` line here and one field below.

use clap::{CommandFactory, Parser};

use crate::config::{self, Command, Common, Flags, Invalid};
use crate::state::Shared;
use crate::{checkins, clients, dedup, geo, ledger, policies, queues, ratelimit, seckill, uv};

/// Command line and environment of the `redis-gateway` binary. Each part is
/// `#[group(skip)]`: clap would make a group of each, named after its struct, and the parts
/// share the name `Flags`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "redis-gateway",
    version,
    about = "HTTP/JSON gateway for six classic Redis patterns"
)]
pub struct Config {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub common: Flags,
    #[command(flatten)]
    pub checkins: checkins::Flags,
    #[command(flatten)]
    pub clients: clients::Flags,
    #[command(flatten)]
    pub policies: policies::Flags,
    #[command(flatten)]
    pub ratelimit: ratelimit::Flags,
    #[command(flatten)]
    pub uv: uv::Flags,
    #[command(flatten)]
    pub geo: geo::Flags,
    #[command(flatten)]
    pub seckill: seckill::Flags,
    #[command(flatten)]
    pub dedup: dedup::Flags,
    #[command(flatten)]
    pub queues: queues::Flags,
    #[command(flatten)]
    pub ledger: ledger::Flags,
}

/// Validated settings the library runs on: the shared ones (reached through `Deref`, e.g.
/// `settings.tz`) and each domain's (`settings.geo.max_places`).
#[derive(Debug, Clone)]
pub struct Settings {
    pub common: Common,
    pub checkins: checkins::Settings,
    pub clients: clients::Settings,
    pub policies: policies::Settings,
    pub ratelimit: ratelimit::Settings,
    pub uv: uv::Settings,
    pub geo: geo::Settings,
    pub seckill: seckill::Settings,
    pub dedup: dedup::Settings,
    pub queues: queues::Settings,
    pub ledger: ledger::Settings,
    /// The certificate and key of `tls_files`, read and checked (`None`: plain HTTP).
    pub tls: Option<crate::serve::Tls>,
}

impl Config {
    /// Parses the process's arguments and environment (`config::load`).
    pub fn load() -> Result<Self, Invalid> {
        config::register_command(Self::command);
        config::load()
    }

    /// Checks the parsed configuration and turns it into [`Settings`]: the shared settings
    /// first, then each domain's, so the first refusal is the one told.
    pub fn settings(&self) -> Result<Settings, Invalid> {
        config::register_command(Self::command);
        let common = self.common.settings()?;
        // Read now, so a bad pair stops the start before the store is opened.
        let tls = match &common.tls_files {
            Some(f) => Some(crate::serve::Tls::load(f.cert.clone(), f.key.clone())?),
            None => None,
        };
        Ok(Settings {
            common,
            tls,
            checkins: self.checkins.settings(),
            clients: self.clients.settings(),
            policies: self.policies.settings(),
            ratelimit: self.ratelimit.settings(),
            uv: self.uv.settings()?,
            geo: self.geo.settings(),
            seckill: self.seckill.settings(),
            dedup: self.dedup.settings(),
            queues: self.queues.settings(),
            ledger: self.ledger.settings()?,
        })
    }
}

impl Settings {
    /// Each domain's settings, added to `shared` as the parts its slice reads
    /// (`Shared::part`).
    pub(crate) fn domain_parts(&self, shared: Shared) -> Shared {
        shared
            .with(self.checkins.clone())
            .with(self.clients.clone())
            .with(self.policies.clone())
            .with(self.ratelimit.clone())
            .with(self.uv.clone())
            .with(self.geo.clone())
            .with(self.seckill.clone())
            .with(self.dedup.clone())
            .with(self.queues.clone())
            .with(self.ledger.clone())
    }

    /// Settings as the binary would have them with no flags and no environment: handy in tests.
    pub fn defaults() -> Self {
        Config::parse_from(["redis-gateway"])
            .settings()
            .expect("the defaults are valid")
    }
}

// The shared settings are read everywhere (`settings.tz`, `settings.max_batch`): through
// `Deref` they keep their paths, and only a domain's own settings are named by domain.
impl std::ops::Deref for Settings {
    type Target = Common;

    fn deref(&self) -> &Common {
        &self.common
    }
}

impl std::ops::DerefMut for Settings {
    fn deref_mut(&mut self) -> &mut Common {
        &mut self.common
    }
}
