//! The order ledger: every flash-sale order made durable in PostgreSQL, exactly once.
//!
//! Redis decides who gets the stock; each voucher's order stream is then drained by a
//! background ingester ([`ingest`]) inside every gateway instance that has `DATABASE_URL`:
//! - vouchers are found through a registry set written on create (no `KEYS`/`SCAN`), and each
//!   stream is read on its own, so it works on a Cluster where streams live in many slots;
//! - one consumer group ([`GROUP`]) per stream: several instances share the work, each entry
//!   delivered to one consumer at a time;
//! - rows are inserted with `ON CONFLICT (order_id) DO NOTHING`, and an entry is acked only
//!   after its row is committed, so a crash between the two re-delivers and the insert is a
//!   no-op: each order lands exactly once;
//! - entries left pending longer than the claim idle time (a crashed instance, a failed
//!   attempt) are taken over with `XAUTOCLAIM`;
//! - failures are classified by SQLSTATE ([`sink::Fault`]): only an error of the row's own
//!   data (class 22, 23) counts as an attempt on that order, and an order refused
//!   [`MAX_ATTEMPTS`] times goes to the voucher's dead-letter stream with the reason code. The
//!   database being unreachable, read-only, missing a table, out of resources or timing out
//!   stalls every order alike: the ingester backs off and waits it out, counting nothing, for
//!   however long;
//! - attempts are counted explicitly (a hash per voucher), not taken from the stream's
//!   delivery counter, which also grows when an entry is merely handed out in a round where
//!   the database then turned out to be down;
//! - the backlog (`lag`, `pending`, dead letters) is measured from Redis on its own timer, so
//!   it stays true while PostgreSQL is down;
//! - dead letters can be listed and replayed ([`replay`]): each order is inserted like the
//!   ingester does (a no-op when it is there already, so it lands once).
//!
//! The domain's parts: this core (its types, [`LedgerStore`] — what the ingester and the
//! dead letters need of the store — and [`Ledger`], the handle the app state keeps),
//! [`archive`] (the ledger as the flash sale's `OrderArchive`, which the flash sale's
//! dead-letter routes call),
//! [`sink::Sink`] (where orders are written: PostgreSQL in [`db`]), the ingester, and the store's two
//! backends: `redis.rs` with its scripts, and `memory.rs`, which drains the memory backend's
//! orders the same way.
//!
//! The ledger runs on Redis only: on the memory backend, or without `DATABASE_URL`, it is off
//! and the gateway says so at start-up (docs/operations.md "Order ledger"; the OpenAPI
//! document says the dead-letter listing is always empty on the memory backend). The memory
//! backend's side is complete all the same — a consumer group over the memory flash sale's
//! orders — so the ingester's rules are unit-tested on it with an in-memory sink, and turning
//! the ledger on there would take only the check in [`Ledger::start`].

mod archive;
mod db;
mod ingest;
mod memory;
mod redis;
mod settings;
mod sink;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::config::{self, StoreChoice};
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::types::{Name, UserId};
pub(crate) use archive::Archive;
use ingest::Ingester;
pub use settings::{Flags, Settings};

/// What the composition takes from this domain (`crate::domain::Domain`): its settings. It
/// serves no routes of its own; a voucher's dead letters are the flash sale's routes, which
/// reach the ledger as the flash sale's `OrderArchive` ([`Archive`]).
#[derive(Debug)]
pub struct Domain;

impl crate::domain::Domain for Domain {
    type Flags = Flags;
}

use sink::{Sink, SinkError};

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

/// What one take from a voucher's order stream asks for ([`LedgerStore::ledger_take`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Take<'a> {
    /// The group's consumer the entries go to.
    pub consumer: &'a str,
    /// How long an entry stays pending before any consumer may take it over.
    pub claim_idle_ms: u64,
    /// At most this many entries.
    pub count: usize,
}

crate::store::store_trait! {
    /// What the ledger needs of the store: the voucher registry, and per voucher a consumer
    /// group over its order stream (take, ack, refuse), its backlog and its dead letters. Each
    /// method is one step on the voucher's slot.
    pub(crate) trait LedgerStore {
        /// Every voucher ever created (the registry may name one whose creation was refused).
        async fn ledger_vouchers(&self) -> Result<Vec<Name>, StoreError> = "ledger.vouchers";
        /// Up to `count` entries of `voucher`'s order stream for `consumer`: entries any
        /// consumer left pending `claim_idle_ms` or longer first, then new ones (the group is
        /// made on first use, from the start of the stream, so no order is skipped).
        async fn ledger_take(&self, voucher: &Name, take: Take<'_>)
            -> Result<Vec<Taken>, StoreError> = "ledger.take";
        /// Acknowledges entries whose rows are committed, and forgets their refusal counts.
        async fn ledger_ack(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> = "ledger.ack";
        /// Counts one refusal of each entry's row (`reason` is a code); an entry refused
        /// `max_attempts` times is copied to the dead-letter stream and acked, in one step.
        /// Returns how many were dead-lettered.
        async fn ledger_refuse(&self, voucher: &Name, ids: &[Seq], reason: &str, max_attempts: u64)
            -> Result<u64, StoreError> = "ledger.refuse";
        /// Pending, undelivered and dead-lettered entries of one voucher.
        async fn ledger_backlog(&self, voucher: &Name) -> Result<Backlog, StoreError> = "ledger.backlog";
        /// Up to `limit` dead letters of `voucher` after `after`, oldest first.
        async fn ledger_dead_letters(&self, voucher: &Name, after: Option<Seq>, limit: usize)
            -> Result<Vec<DeadLetter>, StoreError> = "ledger.dead_letters";
        /// Removes dead letters (by their dead-letter ids) once their orders are in the ledger.
        async fn ledger_forget_dead(&self, voucher: &Name, ids: &[Seq]) -> Result<(), StoreError> = "ledger.forget_dead";
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
    /// Starts the ingester on `store` when `DATABASE_URL` is set and the store is Redis;
    /// otherwise the ledger is off, and the log says why.
    ///
    /// `spawn` runs the ingester as a task: the composition passes it, since only where the
    /// store's concrete type is known can the compiler see that the ingester's future (made of
    /// the store's `async fn`s) may move between threads.
    pub(crate) fn start<S: LedgerStore + Clone>(
        settings: &Settings,
        common: &config::Common,
        store: &S,
        spawn: impl FnOnce(Ingester<S, db::Db>) -> tokio::task::AbortHandle,
    ) -> Result<Self, String> {
        let off = || Self {
            status: Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Off))),
            db: None,
            _task: None,
        };
        let Some(url) = settings.database_url.as_deref() else {
            tracing::info!("order ledger is off: DATABASE_URL is not set");
            return Ok(off());
        };
        let StoreChoice::Redis(_) = &common.store else {
            tracing::warn!("order ledger is off: it ingests Redis streams and needs REDIS_URL");
            return Ok(off());
        };
        let db = db::Db::connect_lazy(
            url,
            common.store_timeout.max(Duration::from_secs(2)),
            common.store_timeout,
        )?;
        let status = Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Starting)));
        let ingester = Ingester::new(
            store.clone(),
            db.clone(),
            settings.claim_idle,
            status.clone(),
            common.clock.clone(),
        );
        let task = spawn(ingester);
        tracing::info!("order ledger is on: ingesting seckill orders into PostgreSQL");
        Ok(Self {
            status,
            db: Some(db),
            _task: Some(Arc::new(AbortOnDrop(task))),
        })
    }

    /// The ledger's current state.
    pub fn status(&self) -> LedgerStatus {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Hands every dead letter of `voucher` back to the ledger ([`replay`]); 0 while the
    /// ledger is off.
    pub(crate) async fn replay(
        &self,
        store: &impl LedgerStore,
        voucher: &Name,
    ) -> Result<u64, ReplayError> {
        match &self.db {
            Some(db) => replay(db, store, voucher).await,
            None => Ok(0),
        }
    }
}

/// Up to `limit` dead letters of `voucher` after `after`, reason codes only: dead letters of
/// older versions carried the server's raw text, which is never shown.
pub(crate) async fn dead_letters(
    store: &impl LedgerStore,
    voucher: &Name,
    after: Option<Seq>,
    limit: usize,
) -> Result<Vec<DeadLetter>, StoreError> {
    let mut letters = store.ledger_dead_letters(voucher, after, limit).await?;
    for d in &mut letters {
        if !is_code(&d.reason) {
            d.reason = "unknown".to_owned();
        }
    }
    Ok(letters)
}

/// Hands every dead letter of `voucher` back to `sink`: each order is inserted (a no-op when it
/// is there already, so it lands once) and its dead letter removed; an order the sink still
/// refuses for its own data stays dead-lettered. Returns how many were handed back; stops with
/// [`ReplayError::Database`] when the sink as a whole cannot take orders (nothing is lost:
/// replay again later).
pub(crate) async fn replay(
    sink: &impl Sink,
    store: &impl LedgerStore,
    voucher: &Name,
) -> Result<u64, ReplayError> {
    let mut replayed = 0;
    let mut after = None;
    loop {
        let page = store.ledger_dead_letters(voucher, after, BATCH).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.dead_id);
        for dead in &page {
            let Some(row) = &dead.order else { continue };
            match sink.insert(std::slice::from_ref(row)).await {
                Ok(_) => {
                    store.ledger_forget_dead(voucher, &[dead.dead_id]).await?;
                    replayed += 1;
                }
                Err(
                    e @ SinkError {
                        fault: sink::Fault::Row(_),
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

/// A snake_case reason code, as opposed to free text.
fn is_code(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}
