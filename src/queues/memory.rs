//! Delayed queues in memory, with the Lua scripts' semantics: every operation runs under the
//! domain lock, so a claim is as atomic as the script. The clock is the process's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::queues::logic::{self, Meta};
use crate::queues::Bells;
use crate::queues::{
    Acked, Bell, Cancelled, Claim, Claimed, DeadJob, Due, Enqueued, Heard, Idempotency, Listening,
    NewJob, Once, QueueStore, Stats, CLAIM_BYTES, DEAD_PER_CLAIM, IDEMPOTENCY_SECS, IDLE_SECS,
    LAPSED_PER_CLAIM, MAX_DEAD,
};
use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::Slot;
use crate::types::Name;

/// A queue's event channel in this process.
fn channel(queue: &Name) -> String {
    format!("q:{queue}")
}

impl MemoryStore {
    /// Tells `queue`'s listeners that its ready jobs may have changed.
    fn changed(&self, queue: &Name) {
        if !self.channels().any() {
            return;
        }
        self.channels()
            .tell(&channel(queue), Heard::Message("".into()));
    }
}

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

/// The claims waiting in this process, woken by its enqueues.
static BELLS: Slot<Bells> = Slot::new();

// Bells hold only waiters, which leave on their own; nothing to purge.
impl crate::store::slots::Kept for Bells {}

#[derive(Debug, Default)]
struct State {
    queues: HashMap<Name, Queue>,
}

impl Purge for State {
    /// Drops queues past their expiry (as Redis expires their keys) and stale replies.
    fn purge(&mut self, now: i64) {
        let now_ms = now * 1000;
        reclaim(&mut self.queues, |_, q| q.expires_at > now_ms);
        for q in self.queues.values_mut() {
            q.replies.retain(|_, r| r.expires_at > now_ms);
        }
    }
}

#[derive(Debug)]
struct Job {
    payload: String,
    meta: Meta,
    place: Place,
}

#[derive(Debug, Clone, Copy)]
enum Place {
    /// Waiting, due at this ms.
    Due(i64),
    /// Claimed until this ms.
    Flight(i64),
    /// On the dead list under this sequence.
    Dead(u64),
}

#[derive(Debug)]
struct Reply {
    fingerprint: String,
    outcome: Replied,
    expires_at: i64,
}

/// The first outcome an idempotency key recorded: an enqueue's, or an ack that took effect
/// (refused acks record nothing, as in `queue_ack.lua`).
#[derive(Debug, Clone)]
enum Replied {
    Enqueue(Enqueued),
    Ack,
}

#[derive(Debug, Default)]
struct Queue {
    jobs: HashMap<Name, Job>,
    due: BTreeSet<(i64, Name)>,
    flight: BTreeSet<(i64, Name)>,
    dead: BTreeMap<u64, Name>,
    dead_seq: u64,
    receipt_seq: u64,
    replies: HashMap<String, Reply>,
    /// Unix ms.
    expires_at: i64,
}

impl Queue {
    fn live(&self) -> u64 {
        (self.jobs.len() - self.dead.len()) as u64
    }

    /// Pushes the expiry past the latest due time or deadline held (see `IDLE_SECS`).
    fn touch(&mut self, now: i64) {
        let last_due = self.due.last().map_or(now, |(t, _)| *t);
        let last_flight = self.flight.last().map_or(now, |(t, _)| *t);
        self.expires_at = now.max(last_due).max(last_flight) + IDLE_SECS as i64 * 1000;
    }

    fn kill(&mut self, id: &Name) {
        self.dead_seq += 1;
        let seq = self.dead_seq;
        if let Some(job) = self.jobs.get_mut(id) {
            job.place = Place::Dead(seq);
            job.meta.receipt = None;
        }
        self.dead.insert(seq, id.clone());
        while self.dead.len() as u64 > MAX_DEAD {
            if let Some((_, oldest)) = self.dead.pop_first() {
                self.jobs.remove(&oldest);
            }
        }
    }
}

/// The store's clock in ms.
fn now_ms(store: &MemoryStore) -> i64 {
    store.clock().now_ms()
}

impl QueueStore for MemoryStore {
    async fn queue_enqueue(
        &self,
        queue: &Name,
        job: &NewJob,
        max_jobs: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Enqueued>, StoreError> {
        let (outcome, due_in) = {
            let mut s = self.state(&STATE);
            let now = now_ms(self);
            let q = s.queues.entry(queue.clone()).or_default();
            if q.expires_at <= now && q.expires_at != 0 {
                *q = Queue::default();
            }
            if let Some(idem) = idem {
                if let Some(first) = q.replies.get(&idem.key).filter(|r| r.expires_at > now) {
                    return Ok(match &first.outcome {
                        Replied::Enqueue(e) => idem.replay(&first.fingerprint, e.clone()),
                        Replied::Ack => Once::KeyReused,
                    });
                }
            }
            let outcome = if let Some(existing) = q.jobs.get(&job.id) {
                Enqueued::Existing {
                    id: job.id.clone(),
                    run_at: existing.meta.run_at,
                }
            } else if q.live() >= max_jobs {
                Enqueued::Full
            } else {
                let run_at = match job.due {
                    Due::In(ms) => now + ms as i64,
                    Due::At(at) => at,
                };
                q.jobs.insert(
                    job.id.clone(),
                    Job {
                        payload: job.payload.clone(),
                        meta: Meta {
                            run_at,
                            attempts: 0,
                            max_attempts: job.max_attempts,
                            receipt: None,
                        },
                        place: Place::Due(run_at),
                    },
                );
                q.due.insert((run_at, job.id.clone()));
                Enqueued::Created {
                    id: job.id.clone(),
                    run_at,
                }
            };
            if let (Some(idem), false) = (idem, outcome == Enqueued::Full) {
                q.replies.insert(
                    idem.key.clone(),
                    Reply {
                        fingerprint: idem.fingerprint.clone(),
                        outcome: Replied::Enqueue(outcome.clone()),
                        expires_at: now + IDEMPOTENCY_SECS as i64 * 1000,
                    },
                );
            }
            q.touch(now);
            let due_in = match outcome {
                Enqueued::Created { run_at, .. } => Some((run_at - now).max(0) as u64),
                _ => None,
            };
            (outcome, due_in)
        };
        if let Some(due_in) = due_in {
            self.kept(&BELLS).created(queue.as_str(), due_in);
            self.changed(queue);
        }
        Ok(Once::Now(outcome))
    }

    async fn queue_claim(
        &self,
        queue: &Name,
        max: u32,
        visibility_ms: u64,
    ) -> Result<Claim, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_ms(self);
        let Some(q) = s.queues.get_mut(queue).filter(|q| q.expires_at > now) else {
            return Ok(Claim::default());
        };
        // Lapsed claims are due again from their deadline, attempts kept.
        for _ in 0..LAPSED_PER_CLAIM {
            let Some((deadline, id)) = q.flight.first().cloned().filter(|(t, _)| *t <= now) else {
                break;
            };
            q.flight.remove(&(deadline, id.clone()));
            q.due.insert((deadline, id.clone()));
            if let Some(job) = q.jobs.get_mut(&id) {
                job.place = Place::Due(deadline);
                job.meta.receipt = None;
            }
        }
        let mut jobs = Vec::new();
        let mut bytes = 0u64;
        let mut dead = 0;
        while (jobs.len() as u32) < max && dead < DEAD_PER_CLAIM && bytes < CLAIM_BYTES {
            let Some((due, id)) = q.due.first().cloned().filter(|(t, _)| *t <= now) else {
                break;
            };
            q.due.remove(&(due, id.clone()));
            let Some(job) = q.jobs.get_mut(&id) else {
                continue;
            };
            if job.meta.attempts >= job.meta.max_attempts {
                q.kill(&id);
                dead += 1;
                continue;
            }
            q.receipt_seq += 1;
            job.meta.attempts += 1;
            let receipt = format!("{}.{}", job.meta.attempts, q.receipt_seq);
            job.meta.receipt = Some(receipt.clone());
            let deadline = now + visibility_ms as i64;
            job.place = Place::Flight(deadline);
            q.flight.insert((deadline, id.clone()));
            bytes += job.payload.len() as u64;
            jobs.push(Claimed {
                id,
                payload: job.payload.clone(),
                run_at: job.meta.run_at,
                attempts: job.meta.attempts,
                receipt,
            });
        }
        let next = [q.due.first(), q.flight.first()]
            .into_iter()
            .flatten()
            .map(|(t, _)| *t)
            .min();
        q.touch(now);
        drop(s);
        if !jobs.is_empty() {
            self.changed(queue);
        }
        Ok(Claim {
            jobs,
            next_in_ms: next.map(|t| (t - now).max(0) as u64),
        })
    }

    async fn queue_ack(
        &self,
        queue: &Name,
        id: &Name,
        receipt: &str,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Acked>, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_ms(self);
        let Some(q) = s.queues.get_mut(queue).filter(|q| q.expires_at > now) else {
            return Ok(Once::Now(Acked::Unknown));
        };
        if let Some(idem) = idem {
            if let Some(first) = q.replies.get(&idem.key).filter(|r| r.expires_at > now) {
                return Ok(match first.outcome {
                    Replied::Ack => idem.replay(&first.fingerprint, Acked::Done),
                    Replied::Enqueue(_) => Once::KeyReused,
                });
            }
        }
        let Some(job) = q.jobs.get(id) else {
            return Ok(Once::Now(if logic::issued(receipt, q.receipt_seq) {
                Acked::Expired
            } else {
                Acked::Unknown
            }));
        };
        match job.place {
            Place::Flight(deadline)
                if deadline > now && job.meta.receipt.as_deref() == Some(receipt) =>
            {
                q.flight.remove(&(deadline, id.clone()));
                q.jobs.remove(id);
                if let Some(idem) = idem {
                    q.replies.insert(
                        idem.key.clone(),
                        Reply {
                            fingerprint: idem.fingerprint.clone(),
                            outcome: Replied::Ack,
                            expires_at: now + IDEMPOTENCY_SECS as i64 * 1000,
                        },
                    );
                }
                q.touch(now);
                Ok(Once::Now(Acked::Done))
            }
            _ => Ok(Once::Now(Acked::Expired)),
        }
    }

    async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> {
        let mut s = self.state(&STATE);
        let now = now_ms(self);
        let Some(q) = s.queues.get_mut(queue).filter(|q| q.expires_at > now) else {
            return Ok(Cancelled::NotFound);
        };
        let Some(job) = q.jobs.get(id) else {
            return Ok(Cancelled::NotFound);
        };
        match job.place {
            Place::Flight(deadline) if deadline > now => return Ok(Cancelled::InFlight),
            Place::Flight(deadline) => {
                q.flight.remove(&(deadline, id.clone()));
            }
            Place::Due(due) => {
                q.due.remove(&(due, id.clone()));
            }
            Place::Dead(seq) => {
                q.dead.remove(&seq);
            }
        }
        q.jobs.remove(id);
        q.touch(now);
        drop(s);
        self.changed(queue);
        Ok(Cancelled::Done)
    }

    async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError> {
        let s = self.state(&STATE);
        let now = now_ms(self);
        let Some(q) = s.queues.get(queue).filter(|q| q.expires_at > now) else {
            return Ok(Stats::default());
        };
        let split = (now + 1, Name::try_from("-".to_owned()).expect("a name"));
        let ready_due = q.due.range(..&split).count() as u64;
        let lapsed = q.flight.range(..&split).count() as u64;
        let next = [
            q.due.range(&split..).next(),
            q.flight.range(&split..).next(),
        ]
        .into_iter()
        .flatten()
        .map(|(t, _)| *t)
        .min();
        Ok(Stats {
            delayed: q.due.len() as u64 - ready_due,
            ready: ready_due + lapsed,
            in_flight: q.flight.len() as u64 - lapsed,
            dead: q.dead.len() as u64,
            next_in_ms: next.map(|t| (t - now).max(0) as u64),
        })
    }

    async fn queue_listen(&self, queue: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&channel(queue)))
    }

    async fn queue_dead(
        &self,
        queue: &Name,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<DeadJob>, StoreError> {
        let s = self.state(&STATE);
        let now = now_ms(self);
        let Some(q) = s.queues.get(queue).filter(|q| q.expires_at > now) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut bytes = 0u64;
        for (seq, id) in q.dead.range(after.map_or(0, |a| a.saturating_add(1))..) {
            if out.len() >= limit || bytes >= CLAIM_BYTES {
                break;
            }
            let Some(job) = q.jobs.get(id) else { continue };
            bytes += job.payload.len() as u64;
            out.push(DeadJob {
                seq: *seq,
                id: id.clone(),
                payload: job.payload.clone(),
                run_at: job.meta.run_at,
                attempts: job.meta.attempts,
            });
        }
        Ok(out)
    }

    async fn queue_bell(&self, queue: &Name) -> Bell {
        Bell {
            room: self.kept(&BELLS).room(queue, self.clock()),
            // Every enqueue is this process's own and tells the room.
            recheck: None,
        }
    }
}

/// How the waiting claims of `crate::queues::claim_waiting` use a real backend (this one): how
/// many looks an enqueue costs, whichever claims wait. Here, not beside `claim_waiting`: the
/// domain core does not import a backend (tests/architecture.rs).
#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::queues::{claim_waiting, Claimed, MAX_WAITING_CLAIMS};
    use crate::types::testing::{eventually, name};

    /// This backend, counting the claims that reach it; a look can be made to stall until its
    /// task is aborted (a client that goes away while its claim looks).
    struct Counted {
        store: MemoryStore,
        looks: AtomicUsize,
        stall_next: AtomicBool,
    }

    impl QueueStore for Counted {
        async fn queue_enqueue(
            &self,
            queue: &Name,
            job: &NewJob,
            max_jobs: u64,
            idem: Option<&Idempotency>,
        ) -> Result<Once<Enqueued>, StoreError> {
            self.store.queue_enqueue(queue, job, max_jobs, idem).await
        }
        async fn queue_claim(
            &self,
            queue: &Name,
            max: u32,
            visibility_ms: u64,
        ) -> Result<Claim, StoreError> {
            if self.stall_next.swap(false, Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let claim = self.store.queue_claim(queue, max, visibility_ms).await;
            self.looks.fetch_add(1, Ordering::SeqCst);
            claim
        }
        async fn queue_ack(
            &self,
            queue: &Name,
            id: &Name,
            receipt: &str,
            idem: Option<&Idempotency>,
        ) -> Result<Once<Acked>, StoreError> {
            self.store.queue_ack(queue, id, receipt, idem).await
        }
        async fn queue_cancel(&self, queue: &Name, id: &Name) -> Result<Cancelled, StoreError> {
            self.store.queue_cancel(queue, id).await
        }
        async fn queue_stats(&self, queue: &Name) -> Result<Stats, StoreError> {
            self.store.queue_stats(queue).await
        }
        async fn queue_listen(&self, queue: &Name) -> Result<Listening, StoreError> {
            self.store.queue_listen(queue).await
        }
        async fn queue_dead(
            &self,
            queue: &Name,
            after: Option<u64>,
            limit: usize,
        ) -> Result<Vec<DeadJob>, StoreError> {
            self.store.queue_dead(queue, after, limit).await
        }
        async fn queue_bell(&self, queue: &Name) -> Bell {
            self.store.queue_bell(queue).await
        }
    }

    impl Counted {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                store: MemoryStore::new(&crate::settings::Settings::defaults()),
                looks: AtomicUsize::new(0),
                stall_next: AtomicBool::new(false),
            })
        }

        fn looks(&self) -> usize {
            self.looks.load(Ordering::SeqCst)
        }

        async fn until_looks(&self, n: usize) {
            eventually("the claims looked", || async { self.looks() >= n }).await;
        }

        async fn enqueue(&self, queue: &Name, id: usize, due: Due) {
            let job = NewJob {
                id: name(&format!("j{id}")),
                id_made: false,
                payload: id.to_string(),
                due,
                max_attempts: 10,
            };
            let done = self.queue_enqueue(queue, &job, 1000, None).await.unwrap();
            assert!(matches!(done, Once::Now(Enqueued::Created { .. })));
        }
    }

    type Waiter = tokio::task::JoinHandle<Vec<Claimed>>;

    /// `n` claims of one job each, waiting up to 20 s on `queue`, once all have looked.
    async fn waiters(store: &Arc<Counted>, queue: &Name, n: usize) -> Vec<Waiter> {
        let before = store.looks();
        let waiters = (0..n)
            .map(|_| {
                let (store, queue) = (store.clone(), queue.clone());
                tokio::spawn(async move {
                    claim_waiting(&*store, &queue, 1, 60_000, Duration::from_secs(20))
                        .await
                        .unwrap()
                })
            })
            .collect();
        store.until_looks(before + n).await;
        waiters
    }

    async fn until_answered(waiters: &[Waiter], n: usize) {
        eventually("the claims answered", || async {
            waiters.iter().filter(|w| w.is_finished()).count() >= n
        })
        .await;
    }

    /// Time for any other claim that was woken to look (a woken claim looks at once).
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// Waits for `n` of `waiters` to answer and for any other woken claim to look, then checks
    /// that exactly `n` answered, on at most two looks since `before`.
    async fn just_answered(store: &Counted, waiters: &[Waiter], n: usize, before: usize) {
        until_answered(waiters, n).await;
        settle().await;
        let answered = waiters.iter().filter(|w| w.is_finished()).count();
        assert_eq!(answered, n, "one claim answered per job");
        let looks = store.looks() - before;
        assert!(looks <= 2, "{n} answered on {looks} looks");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_enqueue_wakes_one_waiting_claim_and_the_others_keep_waiting() {
        const WAITERS: usize = 20;
        let store = Counted::new();
        let queue = name("q");
        let waiters = waiters(&store, &queue, WAITERS).await;
        for n in 1..=WAITERS {
            let before = store.looks();
            store.enqueue(&queue, n, Due::In(0)).await;
            just_answered(&store, &waiters, n, before).await;
        }
        let mut ids = HashSet::new();
        for w in waiters {
            let jobs = w.await.unwrap();
            assert_eq!(jobs.len(), 1);
            assert!(ids.insert(jobs[0].id.clone()), "{:?} twice", jobs[0].id);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delayed_job_wakes_one_waiting_claim_when_it_is_due() {
        let store = Counted::new();
        let queue = name("d");
        let waiters = waiters(&store, &queue, 10).await;
        let before = store.looks();
        store.enqueue(&queue, 1, Due::In(1500)).await;
        settle().await;
        assert_eq!(store.looks(), before, "not due yet: nobody looks");
        just_answered(&store, &waiters, 1, before).await;
        for w in waiters {
            w.abort();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_woken_claim_that_goes_away_hands_its_look_on() {
        let store = Counted::new();
        let queue = name("g");
        // The first to wait is the first woken.
        let first = waiters(&store, &queue, 1).await.remove(0);
        let others = waiters(&store, &queue, 10).await;
        let before = store.looks();
        store.stall_next.store(true, Ordering::SeqCst);
        store.enqueue(&queue, 1, Due::In(0)).await;
        // The woken claim is stuck in its look; its client goes away.
        eventually("a claim was woken", || async {
            !store.stall_next.load(Ordering::SeqCst)
        })
        .await;
        first.abort();
        // Another claim looks in its place, well before the 20 s waits end, and only one.
        just_answered(&store, &others, 1, before).await;
        for w in others {
            w.abort();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn claims_past_the_cap_answer_at_once() {
        let store = Counted::new();
        let queue = name("c");
        let seated = waiters(&store, &queue, MAX_WAITING_CLAIMS).await;
        let extra = claim_waiting(&*store, &queue, 1, 60_000, Duration::from_secs(20));
        let jobs = tokio::time::timeout(Duration::from_secs(10), extra)
            .await
            .expect("answered at once, not after its wait")
            .unwrap();
        assert!(jobs.is_empty());
        // Another queue's claims are not affected; one seat freed is one more claim waiting.
        let other = waiters(&store, &name("other"), 1).await;
        assert!(!other[0].is_finished());
        seated[0].abort();
        eventually("the seat is given back", || async {
            bell_waiting(&store, &queue).await < MAX_WAITING_CLAIMS
        })
        .await;
        let again = waiters(&store, &queue, 1).await;
        settle().await;
        assert!(!again[0].is_finished(), "waits again");
        for w in seated.into_iter().chain(other).chain(again) {
            w.abort();
        }
    }

    async fn bell_waiting(store: &Counted, queue: &Name) -> usize {
        store.queue_bell(queue).await.room.waiting()
    }
}
