//! The state every handler shares: the store, the settings and the admin token.

use std::sync::Arc;

use crate::clients::Clients;
use crate::config::Settings;
use crate::ledger::Ledger;
use crate::store::Store;
use crate::types::Day;

/// Cheap to clone: one shared allocation. axum clones the state into every handler and
/// middleware that takes it, several times per request; cloning each field's handle instead
/// cost an atomic per field per clone (issue 19).
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] shares.
#[derive(Debug)]
pub struct Shared {
    pub store: Store,
    pub settings: Arc<Settings>,
    /// The bearer token admin routes require (configured or generated at start-up).
    pub admin_token: Arc<str>,
    /// The order ledger (off unless `DATABASE_URL` is set).
    pub ledger: Ledger,
    /// End-user JWT verification (`None`: user ids are trusted as given).
    pub user_tokens: Option<Arc<crate::auth::UserTokens>>,
    /// The API clients of `GATEWAY_CLIENTS_FILE` (none when unset).
    pub clients: Arc<Clients>,
    /// The store probe `/readyz` and `/metrics` share (at most one a second).
    pub ready_probe: crate::ops::ReadyProbe,
}

impl Shared {
    /// Today in the configured time zone.
    pub fn today(&self) -> Day {
        Day(chrono::Utc::now()
            .with_timezone(&self.settings.tz)
            .date_naive())
    }
}
