//! The ingester: take a batch per voucher, insert, ack; back off while the database as a whole
//! fails; measure the backlog on its own timer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::db::{Db, DbError, Fault};
use super::{LedgerState, LedgerStatus, Row, Taken, BATCH, MAX_ATTEMPTS};
use crate::config::Settings;
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::store::redis::RedisStore;
use crate::types::Name;

/// Pause after a round that found nothing to do.
const IDLE_POLL: Duration = Duration::from_millis(200);
/// Back-off bounds while PostgreSQL or Redis is down or refusing.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How often the backlog (lag, pending, dead letters) is re-measured.
const BACKLOG_EVERY: Duration = Duration::from_secs(1);
/// Reason code of an entry whose fields cannot be read.
const UNREADABLE: &str = "unreadable_entry";

/// Why a round stopped. Never a row's fault: those are handled inside the round.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl RoundError {
    /// The state and reason code `/readyz` shows for it.
    fn state(&self) -> (LedgerState, &'static str) {
        match self {
            Self::Store(_) => (LedgerState::BackingOff, "store_unavailable"),
            Self::Db(e) => match e.fault {
                Fault::Unreachable(_) => (LedgerState::BackingOff, e.fault.reason()),
                Fault::Refusing(_) | Fault::Row(_) => (LedgerState::Failing, e.fault.reason()),
            },
        }
    }
}

#[derive(Debug)]
pub(super) struct Ingester {
    store: RedisStore,
    db: Db,
    /// This instance's consumer name: unique per process, so a restarted instance's
    /// leftovers are recognised as stale and claimed.
    consumer: String,
    claim_idle_ms: u64,
    status: Arc<Mutex<LedgerStatus>>,
}

impl Ingester {
    pub fn new(
        store: RedisStore,
        db: Db,
        settings: &Settings,
        status: Arc<Mutex<LedgerStatus>>,
    ) -> Self {
        let consumer = format!("gw-{}-{:08x}", std::process::id(), rand::random::<u32>());
        Self {
            store,
            db,
            consumer,
            claim_idle_ms: u64::try_from(settings.ledger_claim_idle.as_millis())
                .unwrap_or(u64::MAX),
            status,
        }
    }

    fn update(&self, f: impl FnOnce(&mut LedgerStatus)) {
        f(&mut self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    fn set_state(&self, state: LedgerState, reason: Option<&'static str>) {
        self.update(|s| {
            s.state = state;
            s.reason = reason;
        });
        metrics::gauge!("gateway_ledger_up").set(if state == LedgerState::Running {
            1.0
        } else {
            0.0
        });
    }

    /// Ingests and measures until aborted.
    pub async fn run(self) {
        tokio::join!(self.ingest_forever(), self.measure_forever());
    }

    async fn ingest_forever(&self) {
        let mut backoff = BACKOFF_MIN;
        while let Err(e) = self.db.migrate().await {
            let e = RoundError::from(e);
            let (state, reason) = e.state();
            tracing::warn!(
                error = %e,
                reason,
                retry_in_ms = backoff.as_millis() as u64,
                "ledger migrations failed"
            );
            self.set_state(state, Some(reason));
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        tracing::info!(consumer = %self.consumer, "ledger migrations applied; ingesting");
        let mut backoff = BACKOFF_MIN;
        // Until a write succeeded, each round first proves the database takes one: then no
        // entry is handed out (and kept pending for a claim cycle) while it would not, and
        // "running" and "recovered" are only said after a real write.
        let mut writing = false;
        let mut fault: Option<&'static str> = None;
        loop {
            match self.round(!writing).await {
                Ok(done) => {
                    if !writing {
                        if let Some(reason) = fault.take() {
                            tracing::info!(
                                after = reason,
                                "ledger recovered: writes succeed again"
                            );
                        }
                        writing = true;
                        self.set_state(LedgerState::Running, None);
                    }
                    backoff = BACKOFF_MIN;
                    if done == 0 {
                        tokio::time::sleep(IDLE_POLL).await;
                    }
                }
                Err(e) => {
                    let (state, reason) = e.state();
                    tracing::warn!(error = %e, reason, retry_in_ms = backoff.as_millis() as u64, "ledger cannot write; backing off");
                    writing = false;
                    fault = Some(reason);
                    self.set_state(state, Some(reason));
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// One pass over every voucher; returns how many entries were handled.
    async fn round(&self, probe: bool) -> Result<usize, RoundError> {
        if probe {
            self.db.insert(&[]).await?;
        }
        let mut done = 0;
        for voucher in self.store.ledger_vouchers().await? {
            let taken = self
                .store
                .ledger_take(&voucher, &self.consumer, self.claim_idle_ms, BATCH)
                .await?;
            done += taken.len();
            self.ingest(&voucher, taken).await?;
        }
        Ok(done)
    }

    async fn ingest(&self, voucher: &Name, taken: Vec<Taken>) -> Result<(), RoundError> {
        if taken.is_empty() {
            return Ok(());
        }
        let (good, unreadable): (Vec<Taken>, Vec<Taken>) =
            taken.into_iter().partition(|t| t.order.is_some());
        if !unreadable.is_empty() {
            let ids: Vec<Seq> = unreadable.iter().map(|t| t.id).collect();
            tracing::error!(%voucher, count = ids.len(), "unreadable order entries dead-lettered");
            let n = self
                .store
                .ledger_refuse(voucher, &ids, UNREADABLE, 1)
                .await?;
            metrics::counter!("gateway_ledger_dead_lettered_total").increment(n);
        }
        if good.is_empty() {
            return Ok(());
        }
        let rows: Vec<Row> = good.iter().filter_map(|t| t.order.clone()).collect();
        match self.db.insert(&rows).await {
            Ok(new) => {
                let ids: Vec<Seq> = good.iter().map(|t| t.id).collect();
                self.store.ledger_ack(voucher, &ids).await?;
                self.ingested(new);
                Ok(())
            }
            // The batch holds at least one row the database refuses: find which, one by one.
            Err(DbError {
                fault: Fault::Row(_),
                ..
            }) => self.one_by_one(voucher, &good).await,
            Err(e) => Err(e.into()),
        }
    }

    async fn one_by_one(&self, voucher: &Name, taken: &[Taken]) -> Result<(), RoundError> {
        for t in taken {
            let Some(row) = &t.order else { continue };
            match self.db.insert(std::slice::from_ref(row)).await {
                Ok(new) => {
                    self.store.ledger_ack(voucher, &[t.id]).await?;
                    self.ingested(new);
                }
                // Only here is an attempt counted: the database took writes and refused this
                // row's own data. Left pending below the limit, claimed again after the idle
                // time.
                Err(
                    e @ DbError {
                        fault: Fault::Row(reason),
                        ..
                    },
                ) => {
                    let dead = self
                        .store
                        .ledger_refuse(voucher, &[t.id], reason, MAX_ATTEMPTS)
                        .await?;
                    if dead > 0 {
                        tracing::error!(%voucher, order_id = %row.order_id, reason, error = %e, "order dead-lettered");
                        metrics::counter!("gateway_ledger_dead_lettered_total").increment(dead);
                    } else {
                        tracing::warn!(%voucher, order_id = %row.order_id, attempt = t.attempts + 1, reason, error = %e, "order refused; will retry");
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn measure_forever(&self) {
        loop {
            if let Err(e) = self.measure().await {
                tracing::debug!(error = %e, "ledger backlog not measured");
            }
            tokio::time::sleep(BACKLOG_EVERY).await;
        }
    }

    /// Reads the backlog from Redis alone, so it is true while PostgreSQL is down.
    async fn measure(&self) -> Result<(), StoreError> {
        let mut total = super::Backlog::default();
        for voucher in self.store.ledger_vouchers().await? {
            let b = self.store.ledger_backlog(&voucher).await?;
            total.pending += b.pending;
            total.lag += b.lag;
            total.dead_lettered += b.dead_lettered;
        }
        self.update(|s| {
            s.pending = total.pending;
            s.lag = total.lag + total.pending;
            s.dead_lettered = total.dead_lettered;
        });
        metrics::gauge!("gateway_ledger_pending").set(total.pending as f64);
        metrics::gauge!("gateway_ledger_lag").set((total.lag + total.pending) as f64);
        metrics::gauge!("gateway_ledger_dead_letters").set(total.dead_lettered as f64);
        Ok(())
    }

    /// Counts rows this instance inserted (not those already there).
    fn ingested(&self, new: u64) {
        self.update(|s| s.ingested += new);
        metrics::counter!("gateway_ledger_ingested_total").increment(new);
    }
}
