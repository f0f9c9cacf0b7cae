//! The clock the memory backend and the HTTP layers read "now" from (docs/design.md "Shape").
//!
//! The binary runs on [`Clock::system`], the wall clock. Tests make a clock they move by hand
//! ([`Clock::manual`], [`Clock::shifted`]) so what depends on time passing (expiry, windows,
//! leases, visibility) is tried without sleeping. The Redis backend reads Redis's own clock
//! (`TIME` in its scripts) and never this one.
//!
//! Timers that wait for the store's time to pass (a lock's lease, a job's due time, a waiting
//! request's deadline: `crate::wait`) sleep on the clock too ([`Clock::sleep_until`]): on a
//! clock moved by hand they end when it is moved past them, not after real time, and the clock
//! counts them ([`Clock::sleeping`]), so a test sees when a request has gone to sleep.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

/// Cheap to clone; clones read (and move) the same time.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// `None`: the wall clock, read as it is (the hot path is one `SystemTime::now()`).
    manual: Option<Arc<Manual>>,
}

#[derive(Debug)]
struct Manual {
    /// µs: the time itself when `runs` is false, what is added to the wall clock when true.
    at_us: AtomicI64,
    runs: bool,
    /// Told on every [`Clock::advance`]: the sleeps re-read the time.
    moved: Notify,
    /// Sleeps under way ([`Clock::sleep_until`]).
    sleeping: AtomicUsize,
}

/// Counts one sleep while it lasts.
struct Sleeping<'a>(&'a Manual);

impl<'a> Sleeping<'a> {
    fn new(m: &'a Manual) -> Self {
        m.sleeping.fetch_add(1, Ordering::SeqCst);
        Self(m)
    }
}

impl Drop for Sleeping<'_> {
    fn drop(&mut self) {
        self.0.sleeping.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Clock {
    /// The wall clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// A clock stopped at `start` that moves only by [`Clock::advance`].
    pub fn manual(start: SystemTime) -> Self {
        Self::moved(us_since_epoch(start), false)
    }

    /// The wall clock, moved ahead by what [`Clock::advance`] adds: for tests whose other
    /// parties read the wall clock meanwhile.
    pub fn shifted() -> Self {
        Self::moved(0, true)
    }

    fn moved(at_us: i64, runs: bool) -> Self {
        Self {
            manual: Some(Arc::new(Manual {
                at_us: AtomicI64::new(at_us),
                runs,
                moved: Notify::new(),
                sleeping: AtomicUsize::new(0),
            })),
        }
    }

    /// Whether this clock moves by hand ([`Clock::manual`] or [`Clock::shifted`]).
    pub fn is_manual(&self) -> bool {
        self.manual.is_some()
    }

    /// Moves a manual clock on by `by`. The wall clock cannot be moved: it panics.
    pub fn advance(&self, by: Duration) {
        let m = self
            .manual
            .as_ref()
            .expect("only a manual clock is advanced");
        let by = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        m.at_us.fetch_add(by, Ordering::Relaxed);
        m.moved.notify_waiters();
    }

    /// Sleeps until this clock reads `at_us` (µs since the Unix epoch): a timer on the wall
    /// clock; on a clock moved by hand, until [`Clock::advance`] takes it there (or, on a
    /// shifted clock, the wall clock does).
    pub async fn sleep_until(&self, at_us: i64) {
        let Some(m) = &self.manual else {
            tokio::time::sleep(until(at_us, self.now_us())).await;
            return;
        };
        let _counted = Sleeping::new(m);
        loop {
            // Listening before the time is read, so a move in between is not missed.
            let moved = m.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let left = until(at_us, self.now_us());
            if left.is_zero() {
                return;
            }
            if m.runs {
                tokio::select! {
                    () = tokio::time::sleep(left) => {}
                    () = moved => {}
                }
            } else {
                moved.await;
            }
        }
    }

    /// Sleeps for `d` of this clock's time ([`Clock::sleep_until`]).
    pub async fn sleep(&self, d: Duration) {
        let d = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.sleep_until(self.now_us().saturating_add(d)).await;
    }

    /// Sleeps under way on a clock moved by hand (the wall clock's are not counted: 0).
    pub fn sleeping(&self) -> usize {
        self.manual
            .as_ref()
            .map_or(0, |m| m.sleeping.load(Ordering::SeqCst))
    }

    /// Microseconds since the Unix epoch.
    pub fn now_us(&self) -> i64 {
        match &self.manual {
            None => us_since_epoch(SystemTime::now()),
            Some(m) => {
                let at = m.at_us.load(Ordering::Relaxed);
                if m.runs {
                    at.saturating_add(us_since_epoch(SystemTime::now()))
                } else {
                    at
                }
            }
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        self.now_us().div_euclid(1_000)
    }

    /// Seconds since the Unix epoch.
    pub fn now_s(&self) -> i64 {
        self.now_us().div_euclid(1_000_000)
    }

    /// Now as a UTC date and time.
    pub fn now_utc(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp_micros(self.now_us()).unwrap_or_default()
    }
}

/// From `now_us` to `at_us`, none when it has passed.
fn until(at_us: i64, now_us: i64) -> Duration {
    Duration::from_micros(u64::try_from(at_us.saturating_sub(now_us)).unwrap_or(0))
}

fn us_since_epoch(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let clock = Clock::manual(start);
        assert_eq!(clock.now_s(), 1_700_000_000);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now_us(), 1_700_000_000_000_000);
        clock.clone().advance(Duration::from_millis(1_500));
        assert_eq!(clock.now_ms(), 1_700_000_001_500);
        assert_eq!(clock.now_s(), 1_700_000_001);
        assert_eq!(clock.now_utc().timestamp_millis(), 1_700_000_001_500);
    }

    #[test]
    fn a_shifted_clock_runs_ahead_of_the_wall_clock() {
        let clock = Clock::shifted();
        let wall = Clock::system();
        assert!((clock.now_ms() - wall.now_ms()).abs() < 1_000);
        clock.advance(Duration::from_secs(3_600));
        let ahead = clock.now_ms() - wall.now_ms();
        assert!((3_599_000..3_601_000).contains(&ahead), "{ahead}");
    }

    #[tokio::test]
    async fn a_sleep_on_a_manual_clock_ends_when_the_clock_is_moved_past_it() {
        let clock = Clock::manual(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        let sleeper = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.sleep(Duration::from_secs(60)).await })
        };
        while clock.sleeping() == 0 {
            tokio::task::yield_now().await;
        }
        clock.advance(Duration::from_secs(59));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished(), "a second short");
        assert_eq!(clock.sleeping(), 1);
        clock.advance(Duration::from_secs(1));
        tokio::time::timeout(Duration::from_secs(10), sleeper)
            .await
            .expect("over once the clock passed it")
            .unwrap();
        assert_eq!(clock.sleeping(), 0);
        // A time already passed: no sleep at all.
        clock.sleep_until(clock.now_us() - 1).await;
    }

    #[test]
    fn the_system_clock_is_the_wall_clock() {
        let clock = Clock::system();
        assert!(!clock.is_manual());
        assert!((clock.now_s() - chrono::Utc::now().timestamp()).abs() <= 1);
    }
}
