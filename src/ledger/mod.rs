//! The order ledger: every flash-sale order made durable in PostgreSQL, exactly once.
//!
//! Redis decides who gets the stock; each voucher's order stream is then drained by a
//! background ingester inside every gateway instance that has `DATABASE_URL`:
//! - vouchers are found through a registry set written on create (no `KEYS`/`SCAN`), and each
//!   stream is read on its own, so it works on a Cluster where streams live in many slots;
//! - one consumer group ([`GROUP`]) per stream: several instances share the work, each entry
//!   delivered to one consumer at a time;
//! - rows are inserted with `ON CONFLICT (order_id) DO NOTHING`, and an entry is acked only
//!   after its row is committed, so a crash between the two re-delivers and the insert is a
//!   no-op: each order lands exactly once;
//! - entries left pending longer than the claim idle time (a crashed instance, a failed
//!   attempt) are taken over with `XAUTOCLAIM`;
//! - failures are classified by SQLSTATE (`db::Fault`): only an error of the row's own data
//!   (class 22, 23) counts as an attempt on that order, and an order refused [`MAX_ATTEMPTS`]
//!   times goes to the voucher's dead-letter stream with the reason code. The database being
//!   unreachable, read-only, missing a table, out of resources or timing out stalls every
//!   order alike: the ingester backs off and waits it out, counting nothing, for however long;
//! - attempts are counted explicitly (a hash per voucher), not taken from the stream's
//!   delivery counter, which also grows when an entry is merely handed out in a round where
//!   the database then turned out to be down;
//! - the backlog (`lag`, `pending`, dead letters) is measured from Redis on its own timer, so
//!   it stays true while PostgreSQL is down;
//! - dead letters can be listed and replayed (`Ledger::replay`): each order is inserted
//!   like the ingester does (a no-op when it is there already, so it lands once).
//!
//! The ledger needs Redis: on the memory backend, or without `DATABASE_URL`, it is off and the
//! gateway says so at start-up.

mod db;
mod ingest;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::config::{Settings, StoreChoice};
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::store::Store;
use crate::types::{Name, UserId};

/// The consumer group every gateway instance reads the order streams with.
pub const GROUP: &str = "ledger";
/// Most entries handled per voucher per round.
pub const BATCH: usize = 200;
/// Times the database may refuse one order's own row before it is dead-lettered.
pub const MAX_ATTEMPTS: u64 = 5;

/// One order as the ledger stores it.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub order_id: String,
    pub voucher: Name,
    pub user: UserId,
    pub nth: u32,
    pub created_at_ms: u64,
}

/// One stream entry handed to this consumer.
#[derive(Debug, Clone)]
pub(crate) struct Taken {
    pub id: Seq,
    /// `None` when the entry's fields cannot be read (it is dead-lettered at once).
    pub order: Option<Row>,
    /// Times the database refused this row so far (not deliveries).
    pub attempts: u64,
}

/// How far behind the ledger is on one voucher.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Backlog {
    /// Delivered to a consumer, not acked yet.
    pub pending: u64,
    /// Not delivered yet.
    pub lag: u64,
    pub dead_lettered: u64,
}

/// An order the ledger gave up on, as its dead-letter stream holds it.
#[derive(Debug, Clone)]
pub(crate) struct DeadLetter {
    /// Its id in the dead-letter stream (the listing's cursor; its time is when the ledger
    /// gave up).
    pub dead_id: Seq,
    /// `None` when the entry could not be read at all.
    pub order: Option<Row>,
    /// The reason code (`unique_violation`, `unreadable_entry`, …).
    pub reason: String,
    /// Times the database refused the row (`None` in dead letters of older versions).
    pub attempts: Option<u64>,
}

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The database as a whole cannot take orders now (reason code).
    #[error("the ledger database cannot take orders now ({0})")]
    Database(&'static str),
}

/// What the ledger is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LedgerState {
    /// No `DATABASE_URL`, or the memory backend.
    Off,
    /// Applying migrations, before the first one succeeded or failed.
    Starting,
    /// Writing orders.
    Running,
    /// Cannot reach PostgreSQL (or Redis); retrying with exponential back-off.
    BackingOff,
    /// PostgreSQL answers but refuses every write (read-only, missing table, out of resources,
    /// timing out...); retrying with back-off, nothing is dead-lettered for it.
    Failing,
}

/// The ledger's state as `/readyz` reports it. Counts come from Redis and stay true while
/// PostgreSQL is down.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LedgerStatus {
    pub state: LedgerState,
    /// With `backing_off` and `failing`: why, as a code (`unavailable`, `authentication_failed`,
    /// `unknown_database`, `too_many_connections`, `store_unavailable`, `read_only`,
    /// `undefined_table`, `undefined_column`, `permission_denied`, `schema_mismatch`,
    /// `insufficient_resources`, `timeout`, `operator_intervention`, `system_error`,
    /// `internal_error`, `migration_failed`, ...). Details go to the log, never here.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "read_only")]
    pub reason: Option<&'static str>,
    /// Orders not in the ledger yet (undelivered + pending), as of the last check.
    pub lag: u64,
    /// Delivered to an ingester, not yet acknowledged.
    pub pending: u64,
    /// Orders this instance inserted since it started.
    pub ingested: u64,
    /// Entries in the dead-letter streams.
    pub dead_lettered: u64,
}

impl LedgerStatus {
    fn new(state: LedgerState) -> Self {
        Self {
            state,
            reason: None,
            lag: 0,
            pending: 0,
            ingested: 0,
            dead_lettered: 0,
        }
    }
}

/// Handle kept in the app state: the ingester's status, and a guard that stops the ingester
/// when the last handle goes (the gateway shut down).
#[derive(Debug, Clone)]
pub struct Ledger {
    status: Arc<Mutex<LedgerStatus>>,
    /// `None` when the ledger is off.
    db: Option<db::Db>,
    _task: Option<Arc<AbortOnDrop>>,
}

#[derive(Debug)]
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Ledger {
    /// Starts the ingester when `DATABASE_URL` is set and the store is Redis; otherwise the
    /// ledger is off, and the log says why.
    pub fn start(settings: &Settings, store: &Store) -> Result<Self, String> {
        let off = || Self {
            status: Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Off))),
            db: None,
            _task: None,
        };
        let Some(url) = settings.database_url.as_deref() else {
            tracing::info!("order ledger is off: DATABASE_URL is not set");
            return Ok(off());
        };
        let (Store::Redis(redis), StoreChoice::Redis(_)) = (store, &settings.store) else {
            tracing::warn!("order ledger is off: it ingests Redis streams and needs REDIS_URL");
            return Ok(off());
        };
        let db = db::Db::connect_lazy(
            url,
            settings.store_timeout.max(Duration::from_secs(2)),
            settings.store_timeout,
        )?;
        let status = Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Starting)));
        let ingester = ingest::Ingester::new(redis.clone(), db.clone(), settings, status.clone());
        let task = tokio::spawn(ingester.run());
        tracing::info!("order ledger is on: ingesting seckill orders into PostgreSQL");
        Ok(Self {
            status,
            db: Some(db),
            _task: Some(Arc::new(AbortOnDrop(task.abort_handle()))),
        })
    }

    /// The ledger's current state.
    pub fn status(&self) -> LedgerStatus {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Which of `order_ids` the ledger holds; `None` when the ledger is off or cannot answer
    /// within `within` (listings then simply leave the flag out).
    pub async fn ingested(
        &self,
        order_ids: &[String],
        within: Duration,
    ) -> Option<HashSet<String>> {
        let db = self.db.as_ref()?;
        match tokio::time::timeout(within, db.present(order_ids)).await {
            Ok(Ok(ids)) => Some(ids.into_iter().collect()),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "ledger lookup failed");
                None
            }
            Err(_) => None,
        }
    }

    /// Up to `limit` dead letters of `voucher` after `after`; none when the ledger is not on
    /// Redis (it never dead-letters anything then).
    pub(crate) async fn dead_letters(
        store: &Store,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        let mut letters = match store {
            Store::Redis(redis) => redis.ledger_dead_letters(voucher, after, limit).await?,
            Store::Memory(_) => Vec::new(),
        };
        // Dead letters of older versions carried the server's raw text: never shown.
        for d in &mut letters {
            if !is_code(&d.reason) {
                d.reason = "unknown".to_owned();
            }
        }
        Ok(letters)
    }

    /// Hands every dead letter of `voucher` back to the ledger: each order is inserted (a no-op
    /// when it is there already, so it lands once) and its dead letter removed; an order the
    /// database still refuses for its own data stays dead-lettered. Returns how many were
    /// handed back; stops with [`ReplayError::Database`] when the database as a whole cannot
    /// take orders (nothing is lost: replay again later).
    pub(crate) async fn replay(&self, store: &Store, voucher: &Name) -> Result<u64, ReplayError> {
        let (Some(db), Store::Redis(redis)) = (&self.db, store) else {
            return Ok(0);
        };
        let mut replayed = 0;
        let mut after = None;
        loop {
            let page = redis.ledger_dead_letters(voucher, after, BATCH).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.dead_id);
            for dead in &page {
                let Some(row) = &dead.order else { continue };
                match db.insert(std::slice::from_ref(row)).await {
                    Ok(_) => {
                        redis.ledger_forget_dead(voucher, &[dead.dead_id]).await?;
                        replayed += 1;
                    }
                    Err(
                        e @ db::DbError {
                            fault: db::Fault::Row(_),
                            ..
                        },
                    ) => {
                        tracing::warn!(error = %e, order_id = %row.order_id, "dead letter still refused");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "dead-letter replay stopped: the database cannot take orders");
                        return Err(ReplayError::Database(e.fault.reason()));
                    }
                }
            }
        }
        if replayed > 0 {
            tracing::info!(%voucher, replayed, "dead letters replayed into the ledger");
        }
        Ok(replayed)
    }
}

/// A snake_case reason code, as opposed to free text.
fn is_code(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}
