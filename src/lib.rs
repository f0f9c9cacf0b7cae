//! redis-gateway: six classic Redis patterns behind a REST/JSON API.
//!
//! Arrows run one way (docs/design.md "Shape"; `tests/architecture.rs` checks them):
//!
//! ```text
//! src/<domain>/http.rs      routes, OpenAPI annotations, route terms    HTTP: axum, ApiError
//!    │ typed domain calls
//! src/<domain>/mod.rs       types, refusals, the store trait            the domain's core
//!    ▲ implement the trait
//! src/<domain>/memory.rs, redis.rs + *.lua                              its two backends
//! src/store/                connections, Cluster routing, group commit, per-store state,
//!                           StoreError, the backend chosen at start-up (names no domain)
//! ```
//!
//! - [`config`]: the settings the domains share, from flags and environment; [`settings`]:
//!   those and each domain's own (`src/<domain>/settings.rs`) as one command and one
//!   [`settings::Settings`]
//! - [`app`]: the router with every route and the middleware stack (tests build it in-process)
//! - [`run`]: serve on a listener until a shutdown future resolves ([`serve`]: the connection
//!   guards); [`workers`]: how the binary runs it, one single-threaded runtime per core
//! - [`build_state`]: the composition root, the one place that picks a backend; it never waits
//!   for the store ([`startup`]: the API serves once the store is reached)
//! - domains (`checkins`, `uv`, `geo`, `seckill`, `ratelimit`, `dedup`, `queues`, `locks`,
//!   `ledger`, `inventory`): each a folder with its core, its settings, its HTTP layer (with
//!   its slice of the state) and its backends; a store method is declared once with
//!   `store_trait!` (in `store`), which writes the forwarding from [`store::Store`] to the
//!   backend
//! - edges: [`clients`] (API clients), [`auth`] (admin token, end-user JWTs), [`middleware`]
//!   (the stack and the global limiter), [`ops`], [`telemetry`] (logs, traces, metrics),
//!   [`healthcheck`], [`paging`] (every paged listing's `after`, `limit` and `next`)
//!
//! Adding a domain is its folder (implementing [`domain::Domain`] in its `mod.rs`), its `mod`
//! line here and its line in the list of [`settings`], which makes of it its flags and
//! settings, its slice of the state, its routes and their terms.

pub mod auth;
mod calendar;
pub mod checkins;
pub mod clients;
pub mod clock;
pub mod config;
pub mod dedup;
pub mod domain;
pub mod error;
pub mod extract;
pub mod gcra;
pub mod geo;
pub mod healthcheck;
pub mod inventory;
pub mod ledger;
pub mod locks;
pub mod middleware;
pub mod openapi;
pub mod ops;
pub mod paging;
pub mod policies;
pub mod queues;
pub mod ratelimit;
pub mod readiness;
mod reload;
pub mod seckill;
pub mod serve;
pub mod settings;
pub mod shutdown;
pub mod startup;
pub mod state;
pub mod store;
pub mod streams;
pub mod telemetry;
pub mod types;
pub mod uv;
pub mod wait;
pub mod workers;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::ApiError;
use crate::settings::Settings;
use crate::state::AppState;
use crate::store::error::StoreError;
use crate::store::Store;

/// Why the gateway cannot start: each names what failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting refused once the file it names was read or its domain checked it: told in
    /// the one form of every refusal (`invalid configuration: VARIABLE (--flag): …`).
    #[error(transparent)]
    Config(#[from] config::Invalid),
    // Not `#[from]`: that makes the store error this one's source as well, and a chain
    // printed whole (`{:#}`) then tells it twice.
    #[error("store: {0}")]
    Store(StoreError),
    #[error("order ledger: {0}")]
    Ledger(String),
}

impl From<StoreError> for StartError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Opens the store, starts reaching it in the background ([`startup`]) and settles the admin
/// token. Never waits for the store: the caller serves at once. What a setting names (files,
/// keys) is read before the store is opened, so that a refusal does not wait for Redis either.
pub async fn build_state(settings: Settings) -> Result<AppState, StartError> {
    let global = clients::Limits {
        burst: settings.global.max_burst,
        count: settings.global.count_per_period,
        period: settings.global.period,
    };
    let clients = Arc::new(match &settings.clients.file {
        Some(file) => clients::Clients::load(file, global)?,
        None => clients::Clients::none(global),
    });
    let bounds = policies::Bounds {
        max_ttl_s: settings.ratelimit.max_ttl_s,
    };
    let clock = settings.clock.clone();
    let policies = Arc::new(match &settings.policies.file {
        Some(file) => policies::Policies::load(file, openapi::operation_routes(), bounds, clock)?,
        None => policies::Policies::none(bounds, clock),
    });
    let user_tokens = match &settings.jwt {
        Some(jwt) => Some(auth::UserTokens::new(jwt)?),
        None => None,
    };
    let store = Store::open(&settings).await?;
    let admin_token: Arc<str> = match &settings.admin_token {
        Some(token) => token.as_str().into(),
        None => {
            let token = auth::generate_token();
            // Printed once, here; never logged again.
            tracing::warn!(
                "GATEWAY_ADMIN_TOKEN is not set; generated admin token for this process: {token}"
            );
            token.into()
        }
    };
    clients.watch();
    if let Some(tls) = &settings.tls {
        tls.watch();
    }
    policies.watch();
    tokio::spawn(policies.overrides().watching(store.clone()));
    // Read once the store answers, before the API lets a request through.
    let (overrides, reached) = (policies.overrides().clone(), store.clone());
    let startup = startup::Startup::begin(&store, async move {
        overrides.refresh(&reached).await;
    });
    // The ingester is spawned here, where the store's type is concrete (`Ledger::start`).
    let ledger = ledger::Ledger::start(&settings.ledger, &settings, &store, |ingester| {
        tokio::spawn(ingester.run()).abort_handle()
    })
    .map_err(StartError::Ledger)?;
    let credentials = Arc::new(auth::Credentials {
        admin_token,
        user_tokens,
    });
    let ready_probe = readiness::ReadyProbe::new(vec![Box::new(dedup::BloomEngine)]);
    let archive: Arc<dyn seckill::OrderArchive> =
        Arc::new(ledger::Archive::new(ledger.clone(), store.clone()));
    // The parts: each domain's settings, and what one domain offers another.
    let shared = state::Shared::new(
        store,
        Arc::new(settings.common.clone()),
        settings.tls.clone(),
        credentials,
        ready_probe,
        startup,
    );
    let streams = Arc::new(streams::Streams::new(
        settings.events,
        settings.clock.clone(),
    ));
    let shared = settings
        .domain_parts(shared)
        .with(streams)
        .with(ledger)
        .with(archive)
        .with(clients)
        .with(policies);
    Ok(settings::slices(AppState::build(shared)))
}

// The ledger as the flash sale's archive, implemented here where the store's type is concrete:
// a generic store's futures are not known to be `Send` (`ledger::Archive` has the work).
impl seckill::OrderArchive for ledger::Archive<Store> {
    fn holds<'a>(
        &'a self,
        order_ids: &'a [String],
        within: std::time::Duration,
    ) -> futures::future::BoxFuture<'a, Option<std::collections::HashSet<String>>> {
        Box::pin(self.held(order_ids, within))
    }

    fn dead_letters<'a>(
        &'a self,
        voucher: &'a types::Name,
        after: Option<seckill::logic::Seq>,
        limit: usize,
    ) -> futures::future::BoxFuture<'a, Result<Vec<seckill::DeadOrder>, StoreError>> {
        Box::pin(self.dead_orders(voucher, after, limit))
    }

    fn replay<'a>(
        &'a self,
        voucher: &'a types::Name,
    ) -> futures::future::BoxFuture<'a, Result<u64, seckill::ReplayFailed>> {
        Box::pin(self.replay_dead(voucher))
    }
}

/// The whole HTTP surface: API routes and docs under the middleware stack, then the ops routes.
pub fn app(state: AppState) -> Router {
    telemetry::metrics();
    let (api, ops, mut document) = openapi::split();
    let policies = state.part::<Arc<policies::Policies>>();
    openapi::with_policies(&mut document, &policies.current());
    let operations = document.paths.paths.keys().cloned().collect();
    let api = api
        .merge(SwaggerUi::new("/swagger-ui").url("/openapi.json", document))
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) });
    // The limiter wraps the API routes (and their fallback) only: ops routes stay exempt.
    let terms = openapi::route_terms();
    // Innermost on the API routes: the gate that answers 503 until the store has been reached
    // (before anyone is charged), the caller's client and identity, then the global limiter,
    // which also answers the identify layer's refusals once it has charged the address.
    let settings = &state.settings;
    let identify = clients::IdentifyLayer::new(
        state.part::<Arc<clients::Clients>>().clone(),
        settings.trusted_proxies.clone(),
        state.part::<clients::Settings>().anonymous_backend_routes,
        settings.global.enabled,
    );
    let limit = middleware::Maybe(policies::global_limit(&state, terms));
    let gate = middleware::StartupGateLayer {
        gate: state.startup.gate(&state.store),
        operations: Arc::new(operations),
    };
    let edge = tower::ServiceBuilder::new()
        .layer(gate)
        .layer(identify)
        .layer(limit);
    let api = middleware::stack(api, settings, terms, edge);
    let ops = middleware::stack(ops, settings, terms, tower::layer::util::Identity::new());
    api.merge(ops).with_state(state)
}

/// Serves the gateway on `listener` until `shutdown` resolves, then drains in-flight requests.
pub async fn run(
    listener: tokio::net::TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = build_state(settings).await.map_err(std::io::Error::other)?;
    announce(&state, listener.local_addr()?, 1);
    let guards = state.settings.connections;
    let per_address = serve::PerAddress::new(
        guards.max_per_address,
        state.settings.trusted_proxies.clone(),
    );
    let tls = state.tls.clone();
    let shutdown = end_streams(&state, shutdown);
    serve::serve(listener, app(state), guards, per_address, tls, shutdown).await
}

/// `shutdown`, then the end of every event stream, so the drain that follows is not held by
/// them.
pub fn end_streams(
    state: &AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> impl Future<Output = ()> + Send + 'static {
    let streams = state.part::<Arc<streams::Streams>>().clone();
    async move {
        shutdown.await;
        streams.end_all();
    }
}

/// The start-up line: where, on which backend, with how many serving threads.
fn announce(state: &AppState, addr: std::net::SocketAddr, workers: usize) {
    match state.store.backend() {
        "memory" => {
            tracing::info!(%addr, workers, "serving on the embedded in-memory backend (state is per process and lost on exit)")
        }
        backend => tracing::info!(%addr, workers, backend, "serving on Redis"),
    }
}
