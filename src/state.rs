//! The app's state: [`AppState`], what the shared layers and the ops routes are handed (the
//! store, the shared settings, the credentials, …), the parts the composition puts in it
//! ([`Shared::part`]: each domain's settings and the services one domain offers another), and
//! the [`Slice`] of it each domain's handlers are handed instead, holding only what that domain
//! uses. Parts and slices are found by their type, so this module names no domain: the
//! composition (lib.rs) says which there are.

use std::any::{type_name, Any, TypeId};
use std::sync::Arc;

use axum::extract::FromRef;

use crate::auth::Credentials;
use crate::config::Common;
use crate::store::Store;

/// Cheap to clone: one shared allocation. axum clones the state into every handler and
/// middleware that takes it, several times per request; cloning each field's handle instead
/// cost an atomic per field per clone.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Whole>);

#[derive(Debug)]
struct Whole {
    shared: Shared,
    slices: Parts,
}

impl AppState {
    /// Starts the state from `shared`; [`Slices::slice`] adds each domain's slice, made now,
    /// once.
    pub fn build(shared: Shared) -> Slices {
        Slices {
            shared,
            slices: Parts::default(),
        }
    }
}

/// An [`AppState`] being put together: its slices are added one by one.
#[derive(Debug)]
pub struct Slices {
    shared: Shared,
    slices: Parts,
}

impl Slices {
    /// Adds the slice `S` (a domain's `Slice<…>`), made of the shared state now.
    pub fn slice<S: Sliced>(mut self) -> Self {
        let slice = S::of(&self.shared);
        self.slices.insert(slice);
        self
    }

    pub fn done(self) -> AppState {
        AppState(Arc::new(Whole {
            shared: self.shared,
            slices: self.slices,
        }))
    }
}

impl FromRef<AppState> for Arc<Credentials> {
    fn from_ref(state: &AppState) -> Self {
        state.credentials.clone()
    }
}

// Every slice the composition added: a handler asking for one it did not add is a
// composition bug, found by the first request to that handler (every route is tested).
impl<T: std::fmt::Debug + Send + Sync + 'static> FromRef<AppState> for Slice<T> {
    fn from_ref(state: &AppState) -> Self {
        state.0.slices.get::<Slice<T>>().clone()
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
    pub settings: Arc<Common>,
    /// The certificate the server answers HTTPS with (`None`: plain HTTP).
    pub tls: Option<crate::serve::Tls>,
    /// The admin token and end-user JWT verification.
    pub credentials: Arc<Credentials>,
    /// The store probe `/readyz` and `/metrics` share (at most one a second).
    pub ready_probe: crate::readiness::ReadyProbe,
    /// Whether the store has been reached since start-up (until then the API answers 503).
    pub startup: crate::startup::Startup,
    parts: Parts,
}

impl Shared {
    pub fn new(
        store: Store,
        settings: Arc<Common>,
        tls: Option<crate::serve::Tls>,
        credentials: Arc<Credentials>,
        ready_probe: crate::readiness::ReadyProbe,
        startup: crate::startup::Startup,
    ) -> Self {
        Self {
            store,
            settings,
            tls,
            credentials,
            ready_probe,
            startup,
            parts: Parts::default(),
        }
    }

    /// Adds a part: a domain's settings, or a service one domain offers the others. The
    /// settings of a domain without any (`config::NoFlags`: `()`) are no part: several domains
    /// have them, and there is nothing to hand out.
    pub fn with<T: std::fmt::Debug + Send + Sync + 'static>(mut self, part: T) -> Self {
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<()>() {
            self.parts.insert(part);
        }
        self
    }

    /// The part of type `T`. Panics when the composition put none in: a start-up bug.
    pub fn part<T: 'static>(&self) -> &T {
        self.parts.get::<T>()
    }
}

/// Values by their type. A dozen at most, looked up once per request: a scan of a short
/// vector is cheaper than hashing, and a type map crate would be a dependency for 30 lines.
#[derive(Debug, Default)]
struct Parts(Vec<(TypeId, Box<dyn Kept>)>);

trait Kept: Any + Send + Sync + std::fmt::Debug {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + Send + Sync + std::fmt::Debug> Kept for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Parts {
    fn insert<T: std::fmt::Debug + Send + Sync + 'static>(&mut self, value: T) {
        assert!(
            self.0.iter().all(|(id, _)| *id != TypeId::of::<T>()),
            "{} is in the state twice",
            type_name::<T>()
        );
        self.0.push((TypeId::of::<T>(), Box::new(value)));
    }

    fn get<T: 'static>(&self) -> &T {
        self.0
            .iter()
            .find(|(id, _)| *id == TypeId::of::<T>())
            .and_then(|(_, v)| (**v).as_any().downcast_ref::<T>())
            .unwrap_or_else(|| panic!("{} is not in the state", type_name::<T>()))
    }
}

/// A domain's slice of the state: what its handlers are handed (`State<Slice<…>>`), made once
/// when the state is, so that a request clones one `Arc` for it, as for [`AppState`].
#[derive(Debug)]
pub struct Slice<T>(Arc<T>);

/// A [`Slice`], as the composition names it: by the domain's alias (`geo::GeoState`).
pub trait Sliced: std::fmt::Debug + Send + Sync + 'static {
    fn of(shared: &Shared) -> Self;
}

impl<T> Sliced for Slice<T>
where
    T: for<'a> From<&'a Shared> + std::fmt::Debug + Send + Sync + 'static,
{
    fn of(shared: &Shared) -> Self {
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
