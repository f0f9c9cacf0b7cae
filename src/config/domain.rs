//! What a domain's part of the command line is to the composition: flags that turn into the
//! domain's validated settings ([`DomainFlags`]), or none ([`NoFlags`]).

use super::Invalid;

/// A domain's flags: a clap `Args` struct marked `#[group(skip)]` (clap would otherwise make a
/// group of each, and every domain's is named `Flags`) that checks itself into its settings.
pub trait DomainFlags: clap::Args + clap::FromArgMatches + Clone + std::fmt::Debug {
    /// What the domain's routes run on; found by type in the shared state (`Shared::part`).
    type Settings: Clone + std::fmt::Debug + Send + Sync + 'static;

    /// Checks the parsed flags beyond the ranges their parsers hold, naming the setting at
    /// fault, so that a refusal stops the start before the store is opened.
    fn settings(&self) -> Result<Self::Settings, Invalid>;
}

/// The flags of a domain that has none.
#[derive(Debug, Clone, clap::Args)]
#[group(skip)]
pub struct NoFlags {}

impl DomainFlags for NoFlags {
    type Settings = ();

    fn settings(&self) -> Result<(), Invalid> {
        Ok(())
    }
}
