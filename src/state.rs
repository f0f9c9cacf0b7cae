//! The state every handler shares: the store, the settings and the admin token.

use std::sync::Arc;

use axum::extract::FromRef;

use crate::auth::Credentials;
use crate::clients::Clients;
use crate::config::Settings;
use crate::ledger::Ledger;
use crate::store::Store;
use crate::types::Day;

/// Cheap to clone: one shared allocation. axum clones the state into every handler and
/// middleware that takes it, several times per request; cloning each field's handle instead
/// cost an atomic per field per clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl FromRef<AppState> for Arc<Credentials> {
    fn from_ref(state: &AppState) -> Self {
        state.credentials.clone()
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
    /// The admin token and end-user JWT verification.
    pub credentials: Arc<Credentials>,
    /// The order ledger (off unless `DATABASE_URL` is set).
    pub ledger: Ledger,
    /// The API clients of `GATEWAY_CLIENTS_FILE` (none when unset).
    pub clients: Arc<Clients>,
    /// The limit policies of `GATEWAY_POLICIES_FILE` (none when unset).
    pub policies: Arc<crate::policies::Policies>,
    /// The store probe `/readyz` and `/metrics` share (at most one a second).
    pub ready_probe: crate::readiness::ReadyProbe,
    /// Whether the store has been reached since start-up (until then the API answers 503).
    pub startup: crate::startup::Startup,
}

impl Shared {
    /// Today in the configured time zone.
    pub fn today(&self) -> Day {
        Day(self
            .settings
            .clock
            .now_utc()
            .with_timezone(&self.settings.tz)
            .date_naive())
    }
}
