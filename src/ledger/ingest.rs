//! The ingester loop: take a batch per voucher, insert, ack; back off when a side is down.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::db::{Db, DbError};
use super::{LedgerStatus, OrderStreams, Row, Taken, BATCH, MAX_DELIVERIES};
use crate::config::Settings;
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
use crate::types::Name;

/// Pause after a round that found nothing to do.
const IDLE_POLL: Duration = Duration::from_millis(200);
/// Back-off bounds while PostgreSQL or Redis is down.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How often the backlog (lag, pending, dead letters) is re-measured.
const BACKLOG_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl RoundError {
    /// The ledger's state and reason code while this lasts.
    fn state(&self) -> (&'static str, &'static str) {
        match self {
            Self::Store(_) => ("backing_off", "store_unavailable"),
            Self::Db(DbError::Unavailable {
                reason,
                answered: true,
                ..
            }) => ("failing", reason),
            Self::Db(e) => ("backing_off", e.reason()),
        }
    }
}

#[derive(Debug)]
pub(super) struct Ingester<S> {
    store: S,
    db: Db,
    /// This instance's consumer name: unique per process, so a restarted instance's
    /// leftovers are recognised as stale and claimed.
    consumer: String,
    claim_idle_ms: u64,
    status: Arc<Mutex<LedgerStatus>>,
    /// How often this ingester saw each entry refused for its own data. Dead-lettering counts
    /// these, not Redis's delivery counts: an entry is re-delivered every claim round while the
    /// database is down or read-only, and those rounds never tried it. Lost on restart, which
    /// can only mean more attempts, never fewer.
    refusals: Mutex<HashMap<(Name, Seq), u64>>,
}

impl<S: OrderStreams> Ingester<S> {
    pub fn new(store: S, db: Db, settings: &Settings, status: Arc<Mutex<LedgerStatus>>) -> Self {
        let consumer = format!("gw-{}-{:08x}", std::process::id(), rand::random::<u32>());
        Self {
            store,
            db,
            consumer,
            claim_idle_ms: u64::try_from(settings.ledger_claim_idle.as_millis())
                .unwrap_or(u64::MAX),
            status,
            refusals: Mutex::default(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut LedgerStatus)) {
        f(&mut self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    pub async fn run(self) {
        let mut backoff = BACKOFF_MIN;
        let mut measured = Instant::now() - BACKLOG_EVERY;
        while let Err(e) = self.db.migrate().await {
            tracing::warn!(error = %e, "ledger migrations failed; retrying");
            self.update(|s| s.reason = Some(e.reason()));
            // Orders sold meanwhile are lag, and /readyz says so.
            if measured.elapsed() >= BACKLOG_EVERY {
                measured = Instant::now();
                let _ = self.measure().await;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        tracing::info!(consumer = %self.consumer, "ledger migrations applied; ingesting");
        self.update(|s| {
            s.state = "running";
            s.reason = None;
        });
        let mut backoff = BACKOFF_MIN;
        loop {
            let outcome = self.round(backoff != BACKOFF_MIN).await;
            // The backlog comes from Redis alone, so it stays true while PostgreSQL is away.
            if measured.elapsed() >= BACKLOG_EVERY {
                measured = Instant::now();
                let _ = self.measure().await;
            }
            match outcome {
                Ok(done) => {
                    if backoff != BACKOFF_MIN {
                        tracing::info!("ledger recovered");
                    }
                    backoff = BACKOFF_MIN;
                    self.update(|s| {
                        s.state = "running";
                        s.reason = None;
                    });
                    if done == 0 {
                        tokio::time::sleep(IDLE_POLL).await;
                    }
                }
                Err(e) => {
                    let (state, reason) = e.state();
                    tracing::warn!(error = %e, state, reason, retry_in_ms = backoff.as_millis() as u64, "ledger cannot ingest; retrying");
                    self.update(|s| {
                        s.state = state;
                        s.reason = Some(reason);
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// One pass over every voucher; returns how many entries were handled.
    async fn round(&self, recovering: bool) -> Result<usize, RoundError> {
        // A round with nothing to insert would not notice that PostgreSQL is still down, or
        // still refusing writes: the probe is an insert of no rows.
        if recovering {
            self.db.ping().await?;
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
            self.store
                .ledger_dead_letter(voucher, &ids, "unreadable_entry")
                .await?;
            metrics::counter!("gateway_ledger_dead_lettered_total").increment(ids.len() as u64);
        }
        let rows: Vec<Row> = good.iter().filter_map(|t| t.order.clone()).collect();
        match self.db.insert(&rows).await {
            Ok(new) => {
                let ids: Vec<Seq> = good.iter().map(|t| t.id).collect();
                self.store.ledger_ack(voucher, &ids).await?;
                self.ingested(new);
                Ok(())
            }
            Err(e @ DbError::Unavailable { .. }) => Err(e.into()),
            // The batch holds at least one row the database refuses: find which, one by one.
            Err(DbError::Refused { .. }) => self.one_by_one(voucher, &good).await,
        }
    }

    async fn one_by_one(&self, voucher: &Name, taken: &[Taken]) -> Result<(), RoundError> {
        for t in taken {
            let Some(row) = &t.order else { continue };
            match self.db.insert(std::slice::from_ref(row)).await {
                Ok(new) => {
                    self.store.ledger_ack(voucher, &[t.id]).await?;
                    self.forget(voucher, t.id);
                    self.ingested(new);
                }
                Err(e @ DbError::Unavailable { .. }) => return Err(e.into()),
                Err(DbError::Refused { reason, detail }) => {
                    let attempts = self.refused(voucher, t.id);
                    if attempts >= MAX_DELIVERIES {
                        tracing::error!(%voucher, order_id = %row.order_id, reason, %detail, attempts, "order dead-lettered");
                        self.store
                            .ledger_dead_letter(voucher, &[t.id], reason)
                            .await?;
                        self.forget(voucher, t.id);
                        metrics::counter!("gateway_ledger_dead_lettered_total").increment(1);
                    } else {
                        // Left pending: claimed again after the idle time.
                        tracing::warn!(%voucher, order_id = %row.order_id, reason, %detail, attempts, deliveries = t.deliveries, "order refused; will retry");
                    }
                }
            }
        }
        Ok(())
    }

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

    /// Notes one more refusal of `id` for its data; returns how many this ingester has seen.
    fn refused(&self, voucher: &Name, id: Seq) -> u64 {
        let mut refusals = self
            .refusals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Bounded: entries leave when acked or dead-lettered; a flood of bad rows beyond this
        // starts the counts afresh, which only means more attempts.
        if refusals.len() >= 100_000 {
            refusals.clear();
        }
        let n = refusals.entry((voucher.clone(), id)).or_default();
        *n += 1;
        *n
    }

    fn forget(&self, voucher: &Name, id: Seq) {
        if let Ok(mut refusals) = self.refusals.lock() {
            if !refusals.is_empty() {
                refusals.remove(&(voucher.clone(), id));
            }
        }
    }

    /// Counts rows this instance inserted (not those already there).
    fn ingested(&self, new: u64) {
        self.update(|s| s.ingested += new);
        metrics::counter!("gateway_ledger_ingested_total").increment(new);
    }
}
