//! The app's state: [`AppState`], what the shared layers and the ops routes are handed (the
//! store, the settings, the credentials, …), and the [`Slice`] of it each domain's handlers
//! are handed instead, holding only what that domain uses (made in lib.rs, `slices!`).

use std::sync::Arc;

use axum::extract::FromRef;

use crate::auth::Credentials;
use crate::clients::Clients;
use crate::ledger::Ledger;
use crate::settings::Settings;
use crate::store::Store;
use crate::Slices;

/// Cheap to clone: one shared allocation. axum clones the state into every handler and
/// middleware that takes it, several times per request; cloning each field's handle instead
/// cost an atomic per field per clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Whole>);

#[derive(Debug)]
struct Whole {
    shared: Shared,
    slices: Slices,
}

impl AppState {
    /// The state, with each domain's slice of it made now, once.
    pub fn new(shared: Shared) -> Self {
        let slices = Slices::new(&shared);
        Self(Arc::new(Whole { shared, slices }))
    }

    /// Each domain's slice, which `FromRef` hands to its handlers.
    pub fn slices(&self) -> &Slices {
        &self.0.slices
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
        &self.0.shared
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

/// A domain's slice of the state: what its handlers are handed (`State<Slice<…>>`), made once
/// when the state is, so that a request clones one `Arc` for it, as for [`AppState`].
#[derive(Debug)]
pub struct Slice<T>(Arc<T>);

impl<T> Slice<T> {
    /// The slice `T` makes of the shared state.
    pub fn of(shared: &Shared) -> Self
    where
        T: for<'a> From<&'a Shared>,
    {
        Self(Arc::new(T::from(shared)))
    }
}

// By hand: a derive would ask `T: Clone`, and only the `Arc` is cloned.
impl<T> Clone for Slice<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::ops::Deref for Slice<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
