//! The ingester: take a batch per voucher, insert, ack; back off while the sink as a whole
//! fails; measure the backlog on its own timer. It holds the store and the sink through their
//! traits ([`LedgerStore`], [`Sink`]), so its rules run in unit tests on the memory backend
//! and an in-memory sink.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::sink::{Fault, Sink, SinkError};
use super::{LedgerState, LedgerStatus, LedgerStore, Row, Take, Taken, BATCH, MAX_ATTEMPTS};
use crate::clock::Clock;
use crate::seckill::logic::Seq;
use crate::store::error::StoreError;
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
    Sink(#[from] SinkError),
}

impl RoundError {
    /// The state and reason code `/readyz` shows for it.
    fn state(&self) -> (LedgerState, &'static str) {
        match self {
            Self::Store(_) => (LedgerState::BackingOff, "store_unavailable"),
            Self::Sink(e) => match e.fault {
                Fault::Unreachable(_) => (LedgerState::BackingOff, e.fault.reason()),
                Fault::Refusing(_) | Fault::Row(_) => (LedgerState::Failing, e.fault.reason()),
            },
        }
    }
}

#[derive(Debug)]
pub(crate) struct Ingester<S, K> {
    store: S,
    sink: K,
    /// This instance's consumer name: unique per process, so a restarted instance's
    /// leftovers are recognised as stale and claimed.
    consumer: String,
    claim_idle_ms: u64,
    status: Arc<Mutex<LedgerStatus>>,
    /// Times its pauses (idle polls, back-offs, backlog measures): a manual clock lets a test
    /// step through a back-off instead of waiting it out.
    clock: Clock,
}

impl<S: LedgerStore, K: Sink> Ingester<S, K> {
    /// An ingester taking over entries left pending `claim_idle` or longer.
    pub fn new(
        store: S,
        sink: K,
        claim_idle: Duration,
        status: Arc<Mutex<LedgerStatus>>,
        clock: Clock,
    ) -> Self {
        let consumer = format!("gw-{}-{:08x}", std::process::id(), rand::random::<u32>());
        Self {
            store,
            sink,
            consumer,
            claim_idle_ms: u64::try_from(claim_idle.as_millis()).unwrap_or(u64::MAX),
            status,
            clock,
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
        describe_metrics();
        tokio::join!(self.ingest_forever(), self.measure_forever());
    }

    async fn ingest_forever(&self) {
        let mut backoff = BACKOFF_MIN;
        while let Err(e) = self.sink.migrate().await {
            let e = RoundError::from(e);
            let (state, reason) = e.state();
            tracing::warn!(
                error = %e,
                reason,
                retry_in_ms = backoff.as_millis() as u64,
                "ledger migrations failed"
            );
            self.set_state(state, Some(reason));
            self.clock.sleep(backoff).await;
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
                        self.clock.sleep(IDLE_POLL).await;
                    }
                }
                Err(e) => {
                    let (state, reason) = e.state();
                    tracing::warn!(error = %e, reason, retry_in_ms = backoff.as_millis() as u64, "ledger cannot write; backing off");
                    writing = false;
                    fault = Some(reason);
                    self.set_state(state, Some(reason));
                    self.clock.sleep(backoff).await;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
    }

    /// One pass over every voucher; returns how many entries were handled.
    async fn round(&self, probe: bool) -> Result<usize, RoundError> {
        if probe {
            self.sink.insert(&[]).await?;
        }
        let mut done = 0;
        for voucher in self.store.ledger_vouchers().await? {
            let take = Take {
                consumer: &self.consumer,
                claim_idle_ms: self.claim_idle_ms,
                count: BATCH,
            };
            let taken = match self.store.ledger_take(&voucher, take).await {
                // Its master's replicas have not confirmed the orders (they may yet be lost):
                // they stay pending, taken over once idle; the other vouchers go on.
                Err(StoreError::Unreplicated) => {
                    tracing::debug!(%voucher, "orders not yet on the replicas, left pending");
                    continue;
                }
                taken => taken?,
            };
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
        match self.sink.insert(&rows).await {
            Ok(new) => {
                let ids: Vec<Seq> = good.iter().map(|t| t.id).collect();
                self.store.ledger_ack(voucher, &ids).await?;
                self.ingested(new);
                Ok(())
            }
            // The batch holds at least one row the database refuses: find which, one by one.
            Err(SinkError {
                fault: Fault::Row(_),
                ..
            }) => self.one_by_one(voucher, &good).await,
            Err(e) => Err(e.into()),
        }
    }

    async fn one_by_one(&self, voucher: &Name, taken: &[Taken]) -> Result<(), RoundError> {
        for t in taken {
            let Some(row) = &t.order else { continue };
            match self.sink.insert(std::slice::from_ref(row)).await {
                Ok(new) => {
                    self.store.ledger_ack(voucher, &[t.id]).await?;
                    self.ingested(new);
                }
                // Only here is an attempt counted: the database took writes and refused this
                // row's own data. Left pending below the limit, claimed again after the idle
                // time.
                Err(
                    e @ SinkError {
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
            self.clock.sleep(BACKLOG_EVERY).await;
        }
    }

    /// Reads the backlog from the store alone, so it is true while PostgreSQL is down.
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

/// The ledger's metrics, with the help text a scrape shows (`promtool check metrics` wants one
/// for every metric).
fn describe_metrics() {
    let _ = crate::telemetry::metrics();
    metrics::describe_gauge!(
        "gateway_ledger_up",
        "1 while orders reach PostgreSQL, else 0"
    );
    metrics::describe_gauge!(
        "gateway_ledger_pending",
        "Orders taken from the order streams and not yet written to PostgreSQL"
    );
    metrics::describe_gauge!(
        "gateway_ledger_lag",
        "Orders not yet in PostgreSQL, taken or not"
    );
    metrics::describe_gauge!(
        "gateway_ledger_dead_letters",
        "Orders PostgreSQL refused, kept in the vouchers' dead-letter lists"
    );
    metrics::describe_counter!(
        "gateway_ledger_ingested_total",
        "Orders written to PostgreSQL"
    );
    metrics::describe_counter!(
        "gateway_ledger_dead_lettered_total",
        "Orders moved to a dead-letter list"
    );
}

/// The ingester's rules on the memory backend's ledger (`memory.rs`, draining the memory flash
/// sale's orders) and an in-memory sink: exactly once, attempts only for the row's own faults,
/// dead letters after [`MAX_ATTEMPTS`], replay.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::sink::memory::MemorySink;
    use crate::ledger::{dead_letters, replay, ReplayError};
    use crate::seckill::SeckillStore;
    use crate::store::memory::MemoryStore;

    type Tested = Ingester<MemoryStore, MemorySink>;

    /// A voucher `v1` with an order for each of `buyers` (users 0, 1, ...), and an ingester
    /// that takes over pending entries at once (claim idle 0).
    async fn sold(buyers: u32) -> (Tested, Name) {
        let (store, v) = crate::ledger::memory::tests::sold(0..buyers).await;
        let status = Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Starting)));
        let clock = store.clock().clone();
        let ingester = Ingester::new(store, MemorySink::default(), Duration::ZERO, status, clock);
        (ingester, v)
    }

    /// The order ids of `v`, in sale order.
    async fn order_ids(ing: &Tested, v: &Name) -> Vec<String> {
        let orders = ing.store.seckill_orders(v, None, 1000).await.unwrap();
        orders
            .unwrap()
            .iter()
            .map(|o| format!("{v}/{}", o.seq))
            .collect()
    }

    async fn backlog(ing: &Tested, v: &Name) -> (u64, u64, u64) {
        let b = ing.store.ledger_backlog(v).await.unwrap();
        (b.pending, b.lag, b.dead_lettered)
    }

    #[tokio::test]
    async fn every_order_lands_once_in_one_batch() {
        let (ing, v) = sold(5).await;
        assert_eq!(backlog(&ing, &v).await, (0, 5, 0));
        assert_eq!(ing.round(true).await.unwrap(), 5);
        assert_eq!(ing.sink.ids(), order_ids(&ing, &v).await);
        assert_eq!(ing.sink.inserts(), 1);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 0));
        assert_eq!(ing.round(false).await.unwrap(), 0, "all acknowledged");
        ing.measure().await.unwrap();
        let status = ing.status.lock().unwrap().clone();
        assert_eq!((status.ingested, status.lag, status.pending), (5, 0, 0));
    }

    /// What `consumer` takes of `v`'s pending orders at once, as another instance would.
    async fn take_over(ing: &Tested, v: &Name, consumer: &str) -> Vec<Taken> {
        let take = Take {
            consumer,
            claim_idle_ms: 0,
            count: BATCH,
        };
        ing.store.ledger_take(v, take).await.unwrap()
    }

    #[tokio::test]
    async fn a_crash_between_insert_and_ack_lands_each_order_once() {
        let (ing, v) = sold(3).await;
        // Another instance took the orders and committed them, then died before its ack.
        let taken = take_over(&ing, &v, "gone").await;
        let rows: Vec<Row> = taken.iter().filter_map(|t| t.order.clone()).collect();
        assert_eq!(ing.sink.insert(&rows).await.unwrap(), 3);
        assert_eq!(backlog(&ing, &v).await, (3, 0, 0));
        // Taken over once idle: the insert is a no-op, the entries are acknowledged.
        assert_eq!(ing.round(false).await.unwrap(), 3);
        assert_eq!(ing.sink.ids(), order_ids(&ing, &v).await);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 0));
        assert_eq!(ing.status.lock().unwrap().ingested, 0, "nothing was new");
    }

    #[tokio::test]
    async fn the_database_failing_as_a_whole_counts_no_attempt() {
        let (ing, v) = sold(3).await;
        // Until a write is proven, nothing is handed out.
        ing.sink.set_down(Some(Fault::Unreachable("unavailable")));
        let e = ing.round(true).await.unwrap_err();
        assert_eq!(e.state(), (LedgerState::BackingOff, "unavailable"));
        assert_eq!(backlog(&ing, &v).await, (0, 3, 0));
        // Failing after the take: the entries stay pending, however many rounds it lasts.
        for fault in [
            Fault::Unreachable("unavailable"),
            Fault::Refusing("read_only"),
        ] {
            ing.sink.set_down(Some(fault));
            for _ in 0..2 * MAX_ATTEMPTS {
                let e = ing.round(false).await.unwrap_err();
                assert_eq!(e.state().1, fault.reason());
            }
        }
        assert_eq!(backlog(&ing, &v).await, (3, 0, 0));
        let taken = take_over(&ing, &v, "look").await;
        assert!(taken.iter().all(|t| t.attempts == 0), "{taken:?}");
        ing.sink.set_down(None);
        assert_eq!(ing.round(true).await.unwrap(), 3);
        assert_eq!(ing.sink.ids().len(), 3);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 0));
    }

    /// Lets the spawned ingester run until `done`, failing after 5 s of real time.
    async fn settled(what: &str, done: impl Fn() -> bool) {
        let started = std::time::Instant::now();
        while !done() {
            assert!(started.elapsed() < Duration::from_secs(5), "never {what}");
            tokio::task::yield_now().await;
        }
    }

    /// The back-off is timed by the gateway's clock: a test steps the ingester through a
    /// database outage (doublings up to [`BACKOFF_MAX`]) and its end in milliseconds, where the
    /// wall clock would take ~21 s.
    #[tokio::test]
    async fn the_back_off_runs_on_the_gateways_clock() {
        let (store, v) = crate::ledger::memory::tests::sold(0..3).await;
        let clock = crate::clock::Clock::shifted();
        let status = Arc::new(Mutex::new(LedgerStatus::new(LedgerState::Starting)));
        let ing = Arc::new(Ingester::new(
            store,
            MemorySink::default(),
            Duration::ZERO,
            status,
            clock.clone(),
        ));
        ing.sink.set_down(Some(Fault::Unreachable("unavailable")));
        let task = tokio::spawn({
            let ing = ing.clone();
            async move { ing.ingest_forever().await }
        });
        // Each failure sleeps on the clock; moving it past the longest back-off ends the sleep
        // at once, whatever its length, and the next try fails again.
        for tries in 1..=8 {
            settled("backing off", || {
                ing.sink.tried() == tries && clock.sleeping() == 1
            })
            .await;
            assert_eq!(ing.status.lock().unwrap().state, LedgerState::BackingOff);
            clock.advance(BACKOFF_MAX);
        }
        settled("backing off", || {
            ing.sink.tried() == 9 && clock.sleeping() == 1
        })
        .await;
        // Up again, but the back-off (5 s by now) is not over: nothing happens until the clock
        // says so.
        ing.sink.set_down(None);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(ing.sink.tried(), 9, "still backing off");
        clock.advance(BACKOFF_MAX);
        settled("ingested", || ing.sink.ids().len() == 3).await;
        assert_eq!(ing.status.lock().unwrap().state, LedgerState::Running);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 0));
        task.abort();
    }

    #[tokio::test]
    async fn a_refused_row_is_dead_lettered_after_its_attempts_and_replayed() {
        let (ing, v) = sold(3).await;
        let ids = order_ids(&ing, &v).await;
        ing.sink.refuse(&ids[1], "unique_violation");
        // The batch fails on the one row; the others land one by one.
        assert_eq!(ing.round(false).await.unwrap(), 3);
        assert_eq!(ing.sink.ids(), [ids[0].clone(), ids[2].clone()]);
        for refused in 2..MAX_ATTEMPTS {
            assert_eq!(ing.round(false).await.unwrap(), 1);
            // An outage in between counts nothing.
            ing.sink.set_down(Some(Fault::Refusing("read_only")));
            ing.round(false).await.unwrap_err();
            ing.sink.set_down(None);
            let dead = dead_letters(&ing.store, &v, None, 10).await.unwrap();
            assert!(dead.is_empty(), "after {refused} refusals: {dead:?}");
        }
        assert_eq!(ing.round(false).await.unwrap(), 1);
        let dead = dead_letters(&ing.store, &v, None, 10).await.unwrap();
        assert_eq!(dead.len(), 1, "{dead:?}");
        assert_eq!(dead[0].reason, "unique_violation");
        assert_eq!(dead[0].attempts, Some(MAX_ATTEMPTS));
        assert_eq!(dead[0].order.as_ref().unwrap().order_id, ids[1]);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 1));
        assert_eq!(ing.round(false).await.unwrap(), 0, "no longer pending");

        // Replay: still refused, it stays; the database down stops it; fixed, it lands once.
        assert_eq!(replay(&ing.sink, &ing.store, &v).await.unwrap(), 0);
        ing.sink.set_down(Some(Fault::Unreachable("unavailable")));
        let e = replay(&ing.sink, &ing.store, &v).await.unwrap_err();
        assert!(matches!(e, ReplayError::Database("unavailable")), "{e:?}");
        ing.sink.set_down(None);
        ing.sink.forgive(&ids[1]);
        assert_eq!(replay(&ing.sink, &ing.store, &v).await.unwrap(), 1);
        assert_eq!(ing.sink.ids(), ids);
        assert_eq!(backlog(&ing, &v).await, (0, 0, 0));
        assert_eq!(replay(&ing.sink, &ing.store, &v).await.unwrap(), 0);
    }
}
