//! The clock the memory backend and the HTTP layers read "now" from (docs/design.md "Shape").
//!
//! The binary runs on [`Clock::system`], the wall clock. Tests make a clock they move by hand
//! ([`Clock::manual`], [`Clock::shifted`]) so what depends on time passing (expiry, windows,
//! leases, visibility) is tried without sleeping. The Redis backend reads Redis's own clock
//! (`TIME` in its scripts) and never this one.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

    #[test]
    fn the_system_clock_is_the_wall_clock() {
        let clock = Clock::system();
        assert!(!clock.is_manual());
        assert!((clock.now_s() - chrono::Utc::now().timestamp()).abs() <= 1);
    }
}
