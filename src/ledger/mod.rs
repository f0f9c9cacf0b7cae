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
//!   attempt) are taken over with `XAUTOCLAIM`; an entry the database refuses for its own
//!   data (SQLSTATE class 22 or 23) [`MAX_DELIVERIES`] times is moved to the voucher's
//!   dead-letter stream with a reason code;
//! - batches are bounded ([`BATCH`]); when PostgreSQL or Redis is down, or PostgreSQL refuses
//!   every insert (read-only, a table missing, …), the ingester backs off exponentially, says
//!   so in `/readyz` (`backing_off` / `failing` with a reason code) and nothing is
//!   dead-lettered for it.
//!
//! The ledger needs Redis: on the memory backend, or without `DATABASE_URL`, it is off and the
//! gateway says so at start-up.

mod db;
mod ingest;

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::config::Settings;
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::types::{Name, UserId};

/// The consumer group every gateway instance reads the order streams with.
pub const GROUP: &str = "ledger";
/// Most entries handled per voucher per round.
pub const BATCH: usize = 200;
/// Attempts after which an entry the database keeps refusing for its own data is
/// dead-lettered (database-wide failures never count).
pub const MAX_DELIVERIES: u64 = 5;
/// PostgreSQL connections of the ingester, and of request-path reads (listings).
const INGEST_CONNECTIONS: u32 = 4;
const READ_CONNECTIONS: u32 = 2;

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
    /// How often it has been delivered, this time included.
    pub deliveries: u64,
}

/// An order the ledger gave up on, as its dead-letter stream holds it.
#[derive(Debug, Clone)]
pub(crate) struct DeadLetter {
    /// Its id in the dead-letter stream (the listing's cursor).
    pub dead_id: Seq,
    /// `None` when the entry could not be read at all.
    pub order: Option<Row>,
    /// The reason code (`unique_violation`, `unreadable_entry`, …).
    pub reason: String,
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

/// What the ingester needs from the store: the order streams, read through a consumer group.
/// Only the Redis backend has streams; the composition root hands it over when it runs.
///
/// The futures are `Send` because the ingester runs on its own task.
pub(crate) trait OrderStreams: Send + Sync + 'static {
    /// Every voucher ever created.
    fn ledger_vouchers(&self) -> impl Future<Output = Result<Vec<Name>, StoreError>> + Send;
    /// Up to `count` entries for `consumer`: stale pending ones first, then new ones.
    fn ledger_take(
        &self,
        voucher: &Name,
        consumer: &str,
        claim_idle_ms: u64,
        count: usize,
    ) -> impl Future<Output = Result<Vec<Taken>, StoreError>> + Send;
    /// Acknowledges entries whose rows are committed.
    fn ledger_ack(
        &self,
        voucher: &Name,
        ids: &[Seq],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Moves entries to the voucher's dead-letter stream and acks them.
    fn ledger_dead_letter(
        &self,
        voucher: &Name,
        ids: &[Seq],
        reason: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Pending, undelivered and dead-lettered entries of one voucher (and housekeeping of
    /// long-gone consumers).
    fn ledger_backlog(
        &self,
        voucher: &Name,
    ) -> impl Future<Output = Result<Backlog, StoreError>> + Send;
}

/// The dead-letter streams, for the admin listing and replay. Every backend answers: one
/// without streams has never dead-lettered anything.
pub(crate) trait DeadLetters {
    /// Up to `limit` dead letters of `voucher` after the dead-letter stream id `after`.
    fn ledger_dead_letters(
        &self,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DeadLetter>, StoreError>> + Send;
    /// Removes dead letters (by their dead-letter stream ids) once their orders are in the ledger.
    fn ledger_forget_dead(
        &self,
        voucher: &Name,
        ids: &[Seq],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The ledger's state as `/readyz` reports it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LedgerStatus {
    /// `off`; `starting` (applying migrations); `running`; `backing_off` (PostgreSQL or Redis
    /// cannot be reached); `failing` (PostgreSQL answers but refuses every insert, e.g.
    /// read-only or a table missing). Orders wait in Redis meanwhile; none is dead-lettered
    /// for it.
    pub state: &'static str,
    /// Why the ledger is backing off or failing, as a stable code (`unavailable`, `timeout`,
    /// `read_only`, `undefined_table`, `insufficient_resources`, `store_unavailable`, …).
    /// Raw error texts go to the log only.
    #[serde(skip_serializing_if = "Option::is_none")]
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
    fn new(state: &'static str) -> Self {
        Self {
            state,
            lag: 0,
            pending: 0,
            ingested: 0,
            dead_lettered: 0,
            reason: None,
        }
    }
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

/// Handle kept in the app state: the ingester's status, and a guard that stops the ingester
/// when the last handle goes (the gateway shut down).
#[derive(Debug, Clone)]
pub struct Ledger {
    status: Arc<Mutex<LedgerStatus>>,
    /// The request-path pool; `None` when the ledger is off.
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
    /// Starts the ingester when `DATABASE_URL` is set and the store has order streams (it is
    /// Redis); otherwise the ledger is off, and the log says why.
    pub(crate) fn start(
        settings: &Settings,
        streams: Option<impl OrderStreams>,
    ) -> Result<Self, String> {
        let off = || Self {
            status: Arc::new(Mutex::new(LedgerStatus::new("off"))),
            db: None,
            _task: None,
        };
        let Some(url) = settings.database_url.as_deref() else {
            tracing::info!("order ledger is off: DATABASE_URL is not set");
            return Ok(off());
        };
        let Some(streams) = streams else {
            tracing::warn!("order ledger is off: it ingests Redis streams and needs REDIS_URL");
            return Ok(off());
        };
        let timeout = settings
            .store_timeout
            .max(std::time::Duration::from_secs(2));
        let db = db::Db::connect_lazy(url, timeout, INGEST_CONNECTIONS)?;
        // Listings ask the ledger which orders it holds; on a pool of their own, so a flood of
        // listings cannot starve the ingester of connections.
        let reads = db::Db::connect_lazy(url, timeout, READ_CONNECTIONS)?;
        let status = Arc::new(Mutex::new(LedgerStatus::new("starting")));
        let ingester = ingest::Ingester::new(streams, db, settings, status.clone());
        let task = tokio::spawn(ingester.run());
        tracing::info!("order ledger is on: ingesting seckill orders into PostgreSQL");
        Ok(Self {
            status,
            db: Some(reads),
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

    /// Up to `limit` dead letters of `voucher` after `after`; none when the ledger is not on
    /// Redis (it never dead-letters anything then).
    pub(crate) async fn dead_letters(
        store: &impl DeadLetters,
        voucher: &Name,
        after: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<DeadLetter>, StoreError> {
        store.ledger_dead_letters(voucher, after, limit).await
    }

    /// Hands every dead letter of `voucher` back to the ledger: each order is inserted (a no-op
    /// when it is there already, so it lands once) and its dead letter removed; an order the
    /// database still refuses stays dead-lettered. Returns how many were handed back.
    pub(crate) async fn replay(
        &self,
        store: &impl DeadLetters,
        voucher: &Name,
    ) -> Result<u64, ReplayError> {
        // The ledger is on only over Redis, so without a database there is nothing to replay.
        let Some(db) = &self.db else {
            return Ok(0);
        };
        let mut replayed = 0;
        let mut after = None;
        loop {
            let page = store.ledger_dead_letters(voucher, after, BATCH).await?;
            let Some(last) = page.last() else { break };
            after = Some(last.dead_id);
            for dead in &page {
                let Some(row) = &dead.order else { continue };
                match db.insert(std::slice::from_ref(row)).await {
                    Ok(_) => {
                        store.ledger_forget_dead(voucher, &[dead.dead_id]).await?;
                        replayed += 1;
                    }
                    Err(e @ db::DbError::Unavailable { .. }) => {
                        tracing::warn!(error = %e, "dead-letter replay stopped: the database cannot take orders");
                        return Err(ReplayError::Database(e.reason()));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, order_id = %row.order_id, "dead letter still refused");
                    }
                }
            }
        }
        Ok(replayed)
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
}
