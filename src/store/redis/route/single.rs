//! A standalone server: the auto-pipelining pool made at start-up and one per worker thread
//! (`workers.rs`), the pick of a connected client among them (none connected: an error at
//! once rather than the store timeout), and why none connects ([`Failures`], and whether a
//! TLS URL's server answers without TLS).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use fred::prelude::*;
use tokio::sync::broadcast::{error::TryRecvError, Receiver};

use super::replicas::Replicas;

/// Builds a standalone pool of this many connections (the store's settings).
pub(in crate::store::redis) type MakePool = Arc<dyn Fn(usize) -> Result<Pool, Error> + Send + Sync>;

/// A standalone server: the pool made at start-up, and the pools worker threads attached
/// (kept in a thread-local, so picking one takes no lock).
pub(crate) struct Single {
    shared: Pool,
    /// Builds a worker's own pool, with the settings the shared one was built with.
    make: MakePool,
    id: u64,
    failures: Failures,
    /// `host:port`, as `/readyz` names the master.
    pub(super) addr: String,
    /// The wait connection (`GATEWAY_WRITE_REPLICAS` > 0 only).
    pub(in crate::store::redis) replicas: Option<Arc<Replicas>>,
}

thread_local! {
    /// This thread's own pools, by the id of the [`Single`] they serve.
    static OWN: RefCell<Vec<(u64, Pool)>> = const { RefCell::new(Vec::new()) };
}

impl Single {
    /// `failures` listens to `shared`.
    pub(super) fn new(
        shared: Pool,
        make: MakePool,
        failures: Failures,
        addr: String,
        replicas: Option<Arc<Replicas>>,
    ) -> Self {
        static IDS: AtomicU64 = AtomicU64::new(0);
        Single {
            failures,
            shared,
            make,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            addr,
            replicas,
        }
    }

    /// While no connection of the shared pool is up: the error its last attempt to connect
    /// ended in (`None` before any has failed).
    pub(in crate::store::redis) fn connect_failure(&self) -> Option<Error> {
        self.failures.last(&self.shared)
    }

    /// The pool made at start-up, and what listens to its attempts to connect.
    pub(in crate::store::redis) fn shared(&self) -> &Pool {
        &self.shared
    }

    pub(in crate::store::redis) fn failures(&self) -> &Failures {
        &self.failures
    }

    pub(in crate::store::redis) fn make_pool(&self, size: usize) -> Result<Pool, Error> {
        (self.make)(size)
    }

    /// Makes `pool` the calling thread's own for this server.
    pub(in crate::store::redis) fn attach(&self, pool: Pool) {
        OWN.with(|own| {
            let mut own = own.borrow_mut();
            own.retain(|(id, _)| *id != self.id);
            own.push((self.id, pool));
        });
    }

    /// A connected client: the thread's own pool first, else the shared one, else an error at
    /// once. A command handed to a reconnecting client waits the whole store timeout, and
    /// while Redis refuses connections every request would (the fail-fast, for the
    /// standalone server too).
    pub(super) fn pick(&self) -> Result<Client, Error> {
        let own = OWN.with(|own| {
            own.borrow()
                .iter()
                .find(|(id, _)| *id == self.id)
                .and_then(|(_, pool)| connected(pool))
        });
        own.or_else(|| connected(&self.shared)).ok_or_else(|| {
            // Why, when the last attempt to connect says (a refused port, a refused password,
            // no answer in time): the 503 and `/readyz` then carry that reason rather than a
            // bare "unavailable". Other failures stay that: any of them passed on would be a
            // 500 (an error the store boundary does not expect).
            self.connect_failure()
                .filter(|e| {
                    e.kind() == &ErrorKind::Timeout || crate::store::redis::unreachable(e).is_some()
                })
                .unwrap_or_else(|| Error::new(ErrorKind::IO, "Redis is not connected"))
        })
    }
}

/// Whether the server behind a TLS URL answers without TLS (a `rediss://` URL for a server
/// that has none). The failed handshake does not say so: Redis reads the TLS ClientHello as
/// the start of an inline command and waits for its end, so the attempt merely times out
/// (unless the random bytes happen to hold a newline; then the reply breaks the handshake).
/// One plain connection, made and closed by fred, tells.
pub(in crate::store::redis) async fn answers_without_tls(config: &Config, wait: Duration) -> bool {
    let mut plain = config.clone();
    plain.tls = None;
    plain.fail_fast = true;
    let client = Builder::from_config(plain)
        .with_connection_config(|conn| {
            conn.connection_timeout = wait;
            conn.internal_command_timeout = wait;
        })
        .build();
    let Ok(client) = client else {
        return false;
    };
    // Any reply in RESP is an answer, a refused password or database included.
    let answered = match client.init().await {
        Ok(_) => true,
        Err(e) => e.kind() == &ErrorKind::Auth || e.details().starts_with("ERR"),
    };
    let _ = client.quit().await;
    answered
}

fn connected(pool: &Pool) -> Option<Client> {
    let next = pool.next();
    if next.state() == ClientState::Connected {
        return Some(next.clone());
    }
    pool.clients()
        .iter()
        .find(|c| c.state() == ClientState::Connected)
        .cloned()
}

/// The errors a pool's attempts to connect ended in, as fred announces them (a refused or
/// failed connect is not the answer to any command, so the store's calls never see it: they
/// only find no connection up).
pub(crate) struct Failures {
    state: Mutex<State>,
}

struct State {
    receivers: Vec<Receiver<(Error, Option<Server>)>>,
    last: Option<Error>,
    /// The server answered a plain connection where the URL asks for TLS (what the attempts'
    /// own errors, timeouts, do not tell): kept until a connection is up.
    plain: bool,
}

impl Failures {
    /// Listens to `pool`'s clients; subscribe before connecting, so the first failure counts.
    pub(crate) fn of(pool: &Pool) -> Self {
        let receivers = pool.clients().iter().map(|c| c.error_rx()).collect();
        Failures {
            state: Mutex::new(State {
                receivers,
                last: None,
                plain: false,
            }),
        }
    }

    /// Notes that the server answers without TLS where the URL asks for it.
    pub(crate) fn plain_server(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .plain = true;
    }

    /// The latest failure announced, unless a client of `pool` is connected now.
    pub(crate) fn last(&self, pool: &Pool) -> Option<Error> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State {
            receivers,
            last,
            plain,
        } = &mut *state;
        for rx in receivers.iter_mut() {
            loop {
                match rx.try_recv() {
                    Ok((e, _)) => *last = Some(e),
                    Err(TryRecvError::Lagged(_)) => continue,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        if pool
            .clients()
            .iter()
            .any(|c| c.state() == ClientState::Connected)
        {
            *last = None;
            *plain = false;
        }
        if *plain {
            return Some(Error::new(
                ErrorKind::Tls,
                "the server answers without TLS where REDIS_URL asks for it",
            ));
        }
        last.clone()
    }
}
