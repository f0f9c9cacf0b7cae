//! redis-gateway: six classic Redis patterns behind a REST/JSON API.
//!
//! Arrows run one way (docs/design.md "Shape"; `tests/architecture.rs` checks them):
//!
//! ```text
//! http.rs of each domain, middleware, error, extract   HTTP: axum, ApiError, AppState
//!    │ typed domain calls
//! checkins uv geo seckill ratelimit dedup queues locks  domain cores: types, rules, store traits
//! ledger
//!    │ <Domain>Store traits (errors: store::error)      (plus the shared calendar and types)
//! store: dispatch.rs → memory/ | redis/                 backends implement the traits
//! ```
//!
//! - [`config`]: settings from flags and environment
//! - [`app`]: the router with every route and the middleware stack (tests build it in-process)
//! - [`run`]: serve on a listener until a shutdown future resolves ([`serve`]: the connection
//!   guards); [`workers`]: how the binary runs it, one single-threaded runtime per core
//! - [`build_state`]: the composition root, the one place that picks a backend
//! - domains (`checkins`, `uv`, `geo`, `seckill`, `ratelimit`, `dedup`, `queues`, `locks`,
//!   `clients`):
//!   each a folder whose core (`mod.rs` with the types and the `<Domain>Store` trait, pure
//!   rules in `logic.rs`, `search.rs`, `hll.rs`) imports no axum, no app state, no HTTP error
//!   type and no backend — refusals are [`types::Refused`] or the domain's own types
//!   (`seckill::Refusal`, `geo::UnknownCentre`), mapped to problems by its `http.rs`
//!   (`tests/architecture.rs` keeps it so)
//! - [`store`]: the in-memory and Redis backends behind those traits (`fred` stays under
//!   `store/redis/`); [`ledger`]: the order ledger (PostgreSQL)
//! - edges: [`clients`] (API clients), [`auth`] (admin token, end-user JWTs), [`middleware`]
//!   (the stack, the global limiter and its route costs), [`ops`], [`telemetry`] (logs,
//!   traces, metrics), [`healthcheck`]
//!
//! Adding a domain touches its folder, its backend files (`store/{memory,redis}/<domain>.rs`),
//! one `impl` in `store/dispatch.rs` and one line in `openapi.rs`, where the routers are composed.

pub mod auth;
mod calendar;
pub mod checkins;
pub mod clients;
pub mod config;
pub mod dedup;
pub mod error;
pub mod extract;
pub mod geo;
pub mod healthcheck;
pub mod ledger;
pub mod locks;
pub mod middleware;
pub mod openapi;
pub mod ops;
pub mod queues;
pub mod ratelimit;
pub mod seckill;
pub mod serve;
pub mod shutdown;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod types;
pub mod uv;
pub mod workers;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use utoipa_swagger_ui::SwaggerUi;

use crate::config::Settings;
use crate::error::ApiError;
use crate::state::AppState;
use crate::store::error::StoreError;
use crate::store::Store;

/// Opens the store and settles the admin token.
pub async fn build_state(settings: Settings) -> Result<AppState, StoreError> {
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
    let global = clients::Limits {
        burst: settings.global.max_burst,
        count: settings.global.count_per_period,
        period: settings.global.period,
    };
    let clients = Arc::new(match &settings.clients_file {
        Some(file) => clients::Clients::load(file, global).map_err(StoreError::Internal)?,
        None => clients::Clients::none(global),
    });
    clients.watch();
    let user_tokens = match &settings.jwt {
        Some(jwt) => Some(Arc::new(
            auth::UserTokens::new(jwt).map_err(StoreError::Internal)?,
        )),
        None => None,
    };
    let ledger = ledger::Ledger::start(&settings, &store).map_err(StoreError::Internal)?;
    Ok(AppState::new(state::Shared {
        store,
        settings: Arc::new(settings),
        admin_token,
        ledger,
        clients,
        user_tokens,
        ready_probe: ops::ReadyProbe::default(),
    }))
}

/// The whole HTTP surface: API routes and docs under the middleware stack, then the ops routes.
pub fn app(state: AppState) -> Router {
    telemetry::metrics();
    let (api, ops, document) = openapi::split();
    let api = api
        .merge(SwaggerUi::new("/swagger-ui").url("/openapi.json", document))
        .fallback(|| async { ApiError::NotFound("no such route".to_owned()) });
    // The limiter wraps the API routes (and their fallback) only: ops routes stay exempt.
    let terms = openapi::route_terms();
    let api = middleware::stack(api, &state, middleware::Routes::Api, terms);
    let ops = middleware::stack(ops, &state, middleware::Routes::Ops, terms);
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
    serve::serve(listener, app(state), guards, per_address, shutdown).await
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
