//! Clients known to be over their budget: a worker that has just heard from the
//! store that a client cannot spend even one unit answers that client's next requests itself,
//! with the same GCRA arithmetic, until the store's answer could have changed. A client
//! hammering while refused then costs the store nothing, on every instance.
//!
//! Why the answer stays exact. While a one-unit step is refused, no step of one unit or more
//! is admitted anywhere (a larger step is refused whenever a smaller one is), and only
//! admitted steps write the bucket, so its TAT stays what the store reported until the
//! store's clock reaches the instant one unit fits again. The worker measures time since it
//! *sent* the call on its own monotonic clock: that is at least the time the store's clock
//! has moved on since it read it, so a request decided here at that later instant is refused
//! at any earlier one too, and gets the reply the store would give within one round trip of
//! the request's arrival. Three margins keep it so:
//! - The bucket's key expires up to a millisecond before its TAT (expiries are whole
//!   milliseconds), and a missing key reads as an empty bucket; so nothing is answered here
//!   within [`EXPIRY_MARGIN`] of the TAT.
//! - A step of the store's wall clock, or drift between the two clocks, is bounded by
//!   answering from one store reply for at most [`MAX_AGE`].
//! - A request the arithmetic here would admit goes to the store, never admitted here.
//!
//! This relies on every instance on the store deciding a client's bucket under the same
//! budget, as sharing one budget requires anyway: an instance with a larger one could admit
//! steps the refusal remembered here does not know of.
//!
//! Per worker thread, as the batches are ([`crate::store::group`]): no lock is shared between
//! workers, and each learns from its own calls. At most [`MAX_CLIENTS`] refused clients are
//! remembered per worker, so many addresses cannot make it grow without bound.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use thread_local::ThreadLocal;

use crate::gcra::{decide, Decision, Gcra};
use crate::middleware::FastMap;

/// Longest a store reply answers requests here.
const MAX_AGE: Duration = Duration::from_secs(1);

/// How close to its TAT (µs) a bucket's key may already have expired.
const EXPIRY_MARGIN: i128 = 2_000;

/// Most refused clients one worker remembers.
const MAX_CLIENTS: usize = 10_000;

/// What the store last said of a refused client's bucket.
#[derive(Debug, Clone, Copy)]
struct Known {
    /// The budget it was decided under: a clients-file reload may change it.
    gcra: Gcra,
    /// When the call that learned it was sent (before the store read its clock).
    asked: Instant,
    /// The bucket's TAT after the call, in µs after the store's clock at the call.
    tat: i128,
}

#[derive(Debug, Default)]
pub struct Refusals {
    known: ThreadLocal<RefCell<FastMap<String, Known>>>,
}

impl Refusals {
    /// The store's decision on `quantity` units of `client`'s bucket under `gcra`, when it is
    /// known here to be a refusal; `None`: ask the store.
    pub fn answer(&self, client: &str, gcra: &Gcra, quantity: u64) -> Option<Decision> {
        self.answer_at(client, gcra, quantity, Instant::now)
    }

    /// As [`Self::answer`], reading the clock from `at`, and only for a client known here:
    /// every request asks, and almost none is.
    fn answer_at(
        &self,
        client: &str,
        gcra: &Gcra,
        quantity: u64,
        at: impl FnOnce() -> Instant,
    ) -> Option<Decision> {
        let mut known = self.known.get()?.borrow_mut();
        if known.is_empty() {
            return None;
        }
        let k = *known.get(client)?;
        let elapsed = at().saturating_duration_since(k.asked);
        // Rounded up: an upper bound of how far the store's clock has moved on.
        let now = i128::try_from(elapsed.as_micros()).unwrap_or(i128::MAX) + 1;
        let frozen = k.gcra == *gcra
            && elapsed < MAX_AGE
            && now + EXPIRY_MARGIN <= k.tat
            && !decide(gcra, 1, now, Some(k.tat)).allowed;
        if !frozen {
            known.remove(client);
            return None;
        }
        let decision = decide(gcra, quantity, now, Some(k.tat));
        (!decision.allowed).then_some(decision)
    }

    /// Learns from a store call sent at `asked` whose last step on `client`'s bucket decided
    /// `last`: remembered when it leaves the bucket unable to spend one unit.
    pub fn learn(&self, client: &str, gcra: &Gcra, asked: Instant, last: &Decision) {
        // Every decision reports how far the bucket's TAT (after it) is ahead of the clock.
        let tat = last.reset_after;
        let refusing = tat > EXPIRY_MARGIN && !decide(gcra, 1, 0, Some(tat)).allowed;
        let mut known = self.known.get_or_default().borrow_mut();
        if !refusing {
            if !known.is_empty() {
                known.remove(client);
            }
            return;
        }
        if known.len() >= MAX_CLIENTS && !known.contains_key(client) {
            let now = Instant::now();
            known.retain(|_, k| now.saturating_duration_since(k.asked) < MAX_AGE);
            if known.len() >= MAX_CLIENTS {
                return;
            }
        }
        let k = Known {
            gcra: *gcra,
            asked,
            tat,
        };
        match known.get_mut(client) {
            // A reply to an earlier call may arrive after a later one's: keep the newer.
            Some(old) if old.asked > asked => {}
            Some(old) => *old = k,
            None => {
                known.insert(client.to_owned(), k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burst 4, one unit a minute: limit 5, emission 60 s, tolerance 300 s.
    fn gcra() -> Gcra {
        Gcra::new(4, 1, 60)
    }

    const SEC: i128 = 1_000_000;

    /// What the store decides for `quantity` at `now` µs after a call that found `tat`.
    fn store(quantity: u64, now: i128, tat: i128) -> Decision {
        decide(&gcra(), quantity, now, Some(tat))
    }

    #[test]
    fn a_refused_client_gets_the_stores_own_answer_until_one_unit_could_fit() {
        let (refusals, g, t0) = (Refusals::default(), gcra(), Instant::now());
        // The fifth unit was spent just now: the TAT is 300 s ahead, one unit fits in 60 s.
        let spent = store(1, 0, 240 * SEC);
        assert!(spent.allowed);
        refusals.learn("ip:192.0.2.1", &g, t0, &spent);
        for (after_ms, quantity) in [(0, 1), (1, 1), (250, 2), (999, 5), (999, 6)] {
            let at = t0 + Duration::from_millis(after_ms);
            let answer = refusals.answer_at("ip:192.0.2.1", &g, quantity, || at);
            // The clock the store would read is at most `after_ms` (+1 µs) later.
            let now = i128::from(after_ms) * 1_000 + 1;
            assert_eq!(
                answer,
                Some(store(quantity, now, 300 * SEC)),
                "{after_ms} ms"
            );
        }
        // A peek (0 units) fits, so it is the store's to answer; so is anyone else.
        assert_eq!(refusals.answer_at("ip:192.0.2.1", &g, 0, || t0), None);
        assert_eq!(refusals.answer_at("ip:192.0.2.2", &g, 1, || t0), None);
        // Another budget for the same client (a clients-file reload) asks the store, and the
        // entry is gone.
        let other = Gcra::new(9, 1, 60);
        assert_eq!(refusals.answer_at("ip:192.0.2.1", &other, 1, || t0), None);
        assert_eq!(refusals.answer_at("ip:192.0.2.1", &g, 1, || t0), None);
    }

    #[test]
    fn the_store_is_asked_again_once_its_answer_may_have_changed() {
        let (g, t0) = (gcra(), Instant::now());
        // Burst spent 1 s ago: a unit fits again 59 s after the call.
        let refused = store(1, 0, 300 * SEC);
        assert!(!refused.allowed);
        let refusals = Refusals::default();
        refusals.learn("k:alice", &g, t0, &refused);
        assert!(refusals
            .answer_at("k:alice", &g, 1, || t0 + MAX_AGE / 2)
            .is_some());
        // One reply answers for at most MAX_AGE, however long the refusal lasts.
        assert_eq!(refusals.answer_at("k:alice", &g, 1, || t0 + MAX_AGE), None);

        // A refusal that ends soon: one unit fits 5 ms after the call (TAT 240 s + 5 ms
        // ahead, one unit takes 60 s of the 300 s tolerance).
        let nearly = store(1, 0, 240 * SEC + 5_000);
        assert!(!nearly.allowed);
        refusals.learn("k:bob", &g, t0, &nearly);
        let at = |us| t0 + Duration::from_micros(us);
        assert!(refusals.answer_at("k:bob", &g, 1, || at(4_000)).is_some());
        assert_eq!(refusals.answer_at("k:bob", &g, 1, || at(5_000)), None);

        // With burst 0 a unit fits exactly at the TAT, where the key may already be gone:
        // nothing is answered within EXPIRY_MARGIN of it.
        let short = Gcra::new(0, 1, 1);
        let whole = decide(&short, 1, 0, Some(SEC));
        refusals.learn("k:carol", &short, t0, &whole);
        let tat = u64::try_from(SEC).unwrap();
        let margin = u64::try_from(EXPIRY_MARGIN).unwrap();
        assert!(refusals
            .answer_at("k:carol", &short, 1, || at(tat - margin - 2))
            .is_some());
        assert_eq!(
            refusals.answer_at("k:carol", &short, 1, || at(tat - margin)),
            None
        );
    }

    #[test]
    fn an_admitting_answer_forgets_and_the_memory_is_bounded() {
        let (refusals, g, t0) = (Refusals::default(), gcra(), Instant::now());
        refusals.learn("k:dave", &g, t0, &store(1, 0, 300 * SEC));
        assert!(refusals.answer_at("k:dave", &g, 1, || t0).is_some());
        // A later call left room (one more unit fits): forgotten.
        let roomy = store(1, 0, 100 * SEC);
        assert!(decide(&g, 1, 0, Some(roomy.reset_after)).allowed);
        refusals.learn("k:dave", &g, t0, &roomy);
        assert_eq!(refusals.answer_at("k:dave", &g, 1, || t0), None);

        for n in 0..MAX_CLIENTS + 10 {
            refusals.learn(&format!("ip:{n}"), &g, t0, &store(1, 0, 300 * SEC));
        }
        let known = refusals.known.get().unwrap().borrow();
        assert_eq!(known.len(), MAX_CLIENTS);
    }
}
