//! How the binary runs: one single-threaded Tokio runtime per worker thread
//! (`GATEWAY_WORKERS`, default one per core), all accepting on the one listening socket, each
//! with its own Redis connections (used once they are up; the shared pool's until then); and
//! the process's own thread, which owns what is shared — the state built once
//! ([`crate::build_state`]), its background tasks (reaching the store at start-up, client file
//! watch, order ledger, queue announcements, memory purge) and the shutdown signal.
//!
//! Why not Tokio's work-stealing runtime: there a request's socket, its handler and the Redis
//! connection it uses are driven by whichever thread is free, so most requests cross threads
//! (a futex wake-up each) and each Redis connection sees its commands one at a time. Measured
//! with `bench/ab.py` on 2 cores (UV add): +39% req/s and -30% gateway CPU per request. The
//! cost: a request that computes for long (a UV union over hundreds of HyperLogLogs) delays
//! the other connections of its worker rather than being stolen by an idle one.
//!
//! The workers share one listening socket (duplicated descriptors) rather than `SO_REUSEPORT`:
//! a second process started on the same port fails to bind instead of silently sharing it,
//! and port 0 means one port.

use std::time::Duration;

use tokio::sync::{mpsc, watch};

use crate::settings::Settings;

/// Serves `listener` with `settings.workers` worker threads until Ctrl-C or SIGTERM, then
/// drains every worker. Blocks the calling thread.
pub fn run(listener: std::net::TcpListener, settings: Settings) -> std::io::Result<()> {
    let home = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("gateway-main")
        .build()?;
    home.block_on(serve_all(listener, settings))
}

async fn serve_all(listener: std::net::TcpListener, settings: Settings) -> std::io::Result<()> {
    let workers = settings.workers.max(1);
    let pool_size = (settings.redis_pool_size / workers).max(1);
    // The recorder first: building the state starts connecting the store, and a Cluster sets
    // its nodes' `gateway_redis_node_up` gauges then, which a recorder installed later would
    // never see. Its upkeep task belongs to this thread, not to a worker.
    crate::telemetry::metrics();
    // Never waits for the store (`crate::startup`): its connections, like those a worker
    // attaches below, are made while the workers already serve, so a Redis that is down or
    // slow at start leaves `/healthz` answering, not a silent port.
    let state = crate::build_state(settings)
        .await
        .map_err(std::io::Error::other)?;
    listener.set_nonblocking(true)?;
    crate::announce(&state, listener.local_addr()?, workers);
    let mut guards = state.settings.connections;
    guards.max_connections = guards.max_connections.div_ceil(workers).max(1);
    // Not split like the connection cap: one table for the process, or an address could hold
    // its cap on every worker.
    let per_address = crate::serve::PerAddress::new(
        guards.max_per_address,
        state.settings.trusted_proxies.clone(),
    );
    let (stop, stopping) = watch::channel(false);
    let (ended, mut endings) = mpsc::unbounded_channel::<std::io::Result<()>>();
    for n in 0..workers {
        let listener = listener.try_clone()?;
        let state = state.clone();
        let shortest_timer = state
            .settings
            .store_timeout
            .min(state.settings.request_timeout);
        let mut stopping = stopping.clone();
        let ended = ended.clone();
        let per_address = per_address.clone();
        std::thread::Builder::new()
            .name(format!("gateway-worker-{n}"))
            .spawn(move || {
                let result = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .and_then(|rt| {
                        rt.block_on(async move {
                            if let Err(e) = state.store.attach_worker(pool_size) {
                                tracing::warn!(error = %e, "worker keeps the shared Redis pool");
                            }
                            tokio::spawn(timer_floor(shortest_timer));
                            let listener = tokio::net::TcpListener::from_std(listener)?;
                            let shutdown = crate::end_streams(&state, async move {
                                let _ = stopping.wait_for(|s| *s).await;
                            });
                            let tls = state.tls.clone();
                            let app = crate::app(state);
                            crate::serve::serve(listener, app, guards, per_address, tls, shutdown)
                                .await
                        })
                    });
                let _ = ended.send(result);
            })?;
    }
    drop((ended, listener));
    let stopped_early = tokio::select! {
        () = crate::shutdown::signal() => None,
        first = endings.recv() => Some(first.unwrap_or(Ok(()))),
    };
    let _ = stop.send(true);
    let mut result = stopped_early.unwrap_or(Ok(()));
    while let Some(r) = endings.recv().await {
        result = result.and(r);
    }
    result
}

/// A timer that always fires sooner than any per-request timer (a store call's timeout, the
/// request's), so registering one of those never wakes the worker's own I/O driver.
///
/// Why: Tokio's timer wakes the driver (an `eventfd` write) when a new timer is due before the
/// time the driver last planned to wake at, and it updates that plan only when the driver
/// parks. A worker that parked with no short timer pending — every request answered, only the
/// connections' idle timers left — then wrote the `eventfd` for each store call's timeout until
/// it parked again: one system call and one spurious `epoll_wait` return per request (gdb on
/// `mio`'s waker). With this timer pending, the planned wake is never further away
/// than its period, which is shorter than any per-request timer; it costs a wake-up per period.
async fn timer_floor(shortest: Duration) {
    let period = (shortest / 2).max(Duration::from_millis(5));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
    }
}
