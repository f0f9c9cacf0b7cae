//! The composition: the list of domains (`domains!` below, one line each) and what it makes
//! of them. The configuration: the shared settings (`config/`) and each domain's own
//! (`src/<domain>/settings.rs`) as one clap command, [`Config`], and one validated
//! [`Settings`]; the parts of the shared state that each domain's settings are, the domains'
//! slices ([`slices`]) and their routes ([`ROUTES`], composed in `openapi.rs`). Adding a domain
//! is its folder, its `mod` line in lib.rs and its line in the list.

use clap::{CommandFactory, Parser};

use crate::config::{self, Command, Common, DomainFlags, Flags, Invalid};
use crate::domain::Domain;
use crate::middleware::costs::RouteTerms;
use crate::state::{AppState, Shared, Slices};

/// What the composition takes of a domain's routes (`openapi.rs` merges them in this order).
#[derive(Debug)]
pub struct Routes {
    pub router: fn() -> utoipa_axum::router::OpenApiRouter<AppState>,
    pub terms: &'static [RouteTerms],
    /// The document's tag for them, name and description.
    pub tag: Option<(&'static str, &'static str)>,
}

/// Writes, from the list of domains (a field name and the type implementing [`Domain`]), the
/// command, the settings, their parts of the state, the slices and the routes. A macro
/// because a clap command and a struct need a field per domain, which a loop cannot give.
macro_rules! domains {
    ($($name:ident: $domain:ty,)*) => {
        /// Command line and environment of the `redis-gateway` binary: the shared flags, then
        /// each domain's. Each part is `#[group(skip)]`: clap would make a group of each,
        /// named after its struct, and the parts share the name `Flags`.
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
            $(
                #[command(flatten)]
                pub $name: <$domain as Domain>::Flags,
            )*
        }

        /// Validated settings the library runs on: the shared ones (reached through `Deref`,
        /// e.g. `settings.tz`) and each domain's (`settings.geo.max_places`).
        #[derive(Debug, Clone)]
        pub struct Settings {
            pub common: Common,
            $(pub $name: <<$domain as Domain>::Flags as DomainFlags>::Settings,)*
            /// The certificate and key of `tls_files`, read and checked (`None`: plain HTTP).
            pub tls: Option<crate::serve::Tls>,
        }

        impl Config {
            /// Each domain's settings, checked in the list's order.
            fn domains(
                &self,
                common: Common,
                tls: Option<crate::serve::Tls>,
            ) -> Result<Settings, Invalid> {
                Ok(Settings {
                    common,
                    tls,
                    $($name: self.$name.settings()?,)*
                })
            }
        }

        impl Settings {
            /// Each domain's settings, added to `shared` as the parts its slice reads
            /// (`Shared::part`).
            pub(crate) fn domain_parts(&self, shared: Shared) -> Shared {
                shared $(.with(self.$name.clone()))*
            }
        }

        /// Each domain's slice, handed to its handlers alone (`State<…>` through `FromRef`).
        pub(crate) fn slices(slices: Slices) -> AppState {
            $(let slices = <$domain as Domain>::slice(slices);)*
            slices.done()
        }

        /// Every domain's routes, in the list's order.
        pub const ROUTES: &[Routes] = &[$(
            Routes {
                router: <$domain as Domain>::router,
                terms: <$domain as Domain>::TERMS,
                tag: <$domain as Domain>::TAG,
            },
        )*];
    };
}

// The domains, in the order of the document's tags and of `--help`.
domains! {
    checkins: crate::checkins::Domain,
    uv: crate::uv::Domain,
    geo: crate::geo::Domain,
    seckill: crate::seckill::Domain,
    ratelimit: crate::ratelimit::Domain,
    dedup: crate::dedup::Domain,
    locks: crate::locks::Domain,
    queues: crate::queues::Domain,
    ledger: crate::ledger::Domain,
    clients: crate::clients::Domain,
    policies: crate::policies::Domain,
    inventory: crate::inventory::Domain,
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
        self.domains(common, tls)
    }
}

impl Settings {
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
