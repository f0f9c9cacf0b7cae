//! A standalone server: the auto-pipelining pool made at start-up and one per worker thread
//! (`workers.rs`), and the pick of a connected client among them (none connected: an error at
//! once rather than the store timeout).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use fred::prelude::*;

use super::MakePool;

/// A standalone server: the pool made at start-up, and the pools worker threads attached
/// (kept in a thread-local, so picking one takes no lock).
pub(crate) struct Single {
    shared: Pool,
    /// Builds a worker's own pool, with the settings the shared one was built with.
    make: MakePool,
    id: u64,
}

thread_local! {
    /// This thread's own pools, by the id of the [`Single`] they serve.
    static OWN: RefCell<Vec<(u64, Pool)>> = const { RefCell::new(Vec::new()) };
}

impl Single {
    pub(super) fn new(shared: Pool, make: MakePool) -> Self {
        static IDS: AtomicU64 = AtomicU64::new(0);
        Single {
            shared,
            make,
            id: IDS.fetch_add(1, Ordering::Relaxed),
        }
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
    /// while Redis refuses connections every request would (issue 21's fail-fast, for the
    /// standalone server too).
    pub(super) fn pick(&self) -> Result<Client, Error> {
        let own = OWN.with(|own| {
            own.borrow()
                .iter()
                .find(|(id, _)| *id == self.id)
                .and_then(|(_, pool)| connected(pool))
        });
        own.or_else(|| connected(&self.shared))
            .ok_or_else(|| Error::new(ErrorKind::IO, "Redis is not connected"))
    }
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
