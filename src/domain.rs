//! What a domain hands the composition: the [`Domain`] trait each domain implements once, in
//! its HTTP layer. The composition (the list in `src/settings.rs`, one line per domain) reads
//! everything a domain brings from it: its flags (which check themselves into its settings),
//! its routes with their terms and their tag in the OpenAPI document, and its handlers' slice
//! of the state. Names no domain.

use utoipa_axum::router::OpenApiRouter;

use crate::config::DomainFlags;
use crate::middleware::costs::RouteTerms;
use crate::state::{AppState, Slices};

/// A domain, as the composition sees it. Every item but the flags has a default, for a domain
/// that serves no routes of its own (clients).
pub trait Domain {
    /// Its part of the command line and environment, which checks itself into its
    /// settings (`config::DomainFlags`; `config::NoFlags` for none).
    type Flags: DomainFlags;

    /// Its tag in the OpenAPI document, name and description, which every operation of its
    /// router gets unless it names its own; `None` when its routes name theirs.
    const TAG: Option<(&'static str, &'static str)> = None;

    /// What its routes declare to the shared layers (limiter cost, longest wait).
    const TERMS: &'static [RouteTerms] = &[];

    /// Its routes, each with its documentation.
    fn router() -> OpenApiRouter<AppState> {
        OpenApiRouter::new()
    }

    /// Adds its handlers' slice of the state (`Slices::slice`).
    fn slice(slices: Slices) -> Slices {
        slices
    }
}
