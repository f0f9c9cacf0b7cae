//! The rate-limit checks' own rules: the seeds' window limiters (sliding log, fixed window).
//! The GCRA arithmetic both the checks and the global limiter use is `crate::gcra`, re-exported
//! here.

pub use crate::gcra::*;

/// The seeds' simple limiters (docs/api.md "Rate-limit checks", `algorithm`): at most `limit`
/// units per `period`, counted over a sliding log or per fixed window of the store's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub kind: WindowKind,
    /// `count_per_period`.
    pub limit: u64,
    /// The period, µs.
    pub period: i128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// The exact sliding log: one entry per admitted unit, scored by its µs time.
    Sliding,
    /// One counter per window `[k × period, (k + 1) × period)` of the store's clock.
    Fixed,
}

/// Largest `count_per_period` of a sliding log: it keeps one sorted-set member per unit.
pub const SLIDING_MAX_COUNT: u64 = 10_000;

/// Largest `quantity` of one sliding-log check: each unit is one ZADD member, and 10,000 in one
/// script held Redis ~27 ms; 1,000 keep the check near 2 ms (docs/performance.md "Redis time per
/// request").
pub const SLIDING_MAX_QUANTITY: u64 = 1_000;

/// What the store saw of a window's state in the same atomic step that decided (and made)
/// the write; the decision is derived from it alone, so both backends answer alike and an
/// idempotent replay recomputes the first reply exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSeen {
    /// The store's clock, µs.
    pub now: i128,
    /// Units counted before this request (sliding: entries still in the window).
    pub count: u64,
    /// Sliding only: the time (µs) of the entry whose expiry lets a refused request fit
    /// (the `count + quantity − limit`-th oldest), when refused and `quantity ≤ limit`.
    pub kth: Option<i128>,
    /// Sliding only: the newest entry's time (µs) before this request.
    pub newest: Option<i128>,
}

impl Window {
    /// Whether `quantity` more units fit after `count` (the comparison the Lua scripts repeat).
    pub fn fits(&self, count: u64, quantity: u64) -> bool {
        count.saturating_add(quantity) <= self.limit
    }

    /// The end (µs, exclusive) of the fixed window holding `now`.
    pub fn window_end(&self, now: i128) -> i128 {
        now - now.rem_euclid(self.period) + self.period
    }

    /// The decision for `quantity` units given what the store saw.
    pub fn decide(&self, quantity: u64, seen: &WindowSeen) -> Decision {
        let allowed = self.fits(seen.count, quantity);
        let after = if allowed {
            seen.count + quantity
        } else {
            seen.count
        };
        let never = quantity > self.limit;
        let now = seen.now;
        let (retry_after, reset_after) = match self.kind {
            WindowKind::Sliding => {
                let newest = if allowed && quantity > 0 {
                    Some(now)
                } else {
                    seen.newest
                };
                let reset = newest.map_or(0, |t| (t + self.period - now).max(0));
                let retry = (!allowed && !never)
                    .then(|| seen.kth.map_or(0, |t| (t + self.period - now).max(0)));
                (retry, reset)
            }
            WindowKind::Fixed => {
                let left = self.window_end(now) - now;
                ((!allowed && !never).then_some(left), left)
            }
        };
        Decision {
            allowed,
            limit: self.limit,
            remaining: self.limit.saturating_sub(after),
            retry_after,
            reset_after,
            write: Write::Nothing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arbitrary store clock, µs since the epoch (2026-11-21T11:43:34Z).
    const T0: i128 = 1_763_725_414_000_000;

    /// A bucket as a backend keeps it: the stored TAT and when its key expires.
    #[derive(Default)]
    struct Bucket {
        key: Option<(i128, i128)>,
    }

    impl Bucket {
        /// One call at `now`, applying the write as the backends do; returns redis-cell's
        /// five-element reply.
        fn call(&mut self, gcra: &Gcra, quantity: u64, now: i128) -> [i64; 5] {
            let stored = self.key.filter(|(_, at)| *at > now).map(|(tat, _)| tat);
            let d = decide(gcra, quantity, now, stored);
            match d.write {
                Write::Nothing => {}
                Write::Set { tat, expire_ms } => self.key = Some((tat, now + expire_ms * MS)),
                Write::Delete => self.key = None,
            }
            cell(&d)
        }

        fn exists(&self, now: i128) -> bool {
            self.key.is_some_and(|(_, at)| at > now)
        }
    }

    /// A decision as redis-cell's five-element reply.
    fn cell(d: &Decision) -> [i64; 5] {
        let r = d.reply();
        [
            i64::from(!r.allowed),
            r.limit as i64,
            r.remaining as i64,
            r.retry_after,
            r.reset_after,
        ]
    }

    #[test]
    fn quantities_of_15_30_60() {
        let g = Gcra::new(15, 30, 60);
        assert_eq!(g.emission, 2 * SEC);
        assert_eq!(g.limit, 16);
        assert_eq!(g.tolerance, 32 * SEC);
        assert_eq!(g.window_secs(), 32);
    }

    #[test]
    fn fifteen_thirty_sixty_back_to_back_then_refill() {
        let g = Gcra::new(15, 30, 60);
        let mut b = Bucket::default();
        // Back to back: each call 50 µs after the previous one, as over a fast connection.
        let mut now = T0;
        for i in 1..=16i64 {
            assert_eq!(b.call(&g, 1, now), [0, 16, 16 - i, -1, 2 * i], "call {i}");
            now += 50;
        }
        assert_eq!(b.call(&g, 1, now), [1, 16, 0, 2, 32]);
        // 2.1 s after the first call: the TAT is T0 + 32 s, so ttl = 29.9 s and 2.1 s of
        // headroom hold one unit.
        let later = T0 + 2_100_000;
        assert_eq!(b.call(&g, 0, later), [0, 16, 1, -1, 30]);
        let d = decide(&g, 0, later, Some(T0 + 32 * SEC));
        assert_eq!(d.reset_after, 29_900_000);
        assert_eq!(d.reply().reset_after_ms, 29_900);
        assert_eq!(d.write, Write::Nothing);
    }

    #[test]
    fn steps_at_one_instant_are_the_steps_one_by_one() {
        // Burst 3 (limit 4), 1 per second: a peek, a refusal that fits nothing, a step that
        // fills the bucket, a refusal, a step that comes back to an emptied key.
        let g = Gcra::new(3, 1, 1);
        let quantities = [1, 0, 2, 9, 1, 1, 0];
        for stored in [None, Some(T0 - SEC), Some(T0 + SEC / 2)] {
            let mut b = Bucket::default();
            if let Some(tat) = stored {
                b.key = Some((tat, T0 + 10 * SEC));
            }
            let batch = decide_steps(&g, &quantities, T0, stored);
            let one_by_one: Vec<[i64; 5]> = quantities.iter().map(|&q| b.call(&g, q, T0)).collect();
            let replies: Vec<[i64; 5]> = batch.iter().map(cell).collect();
            assert_eq!(replies, one_by_one, "stored {stored:?}");
        }
        // From an empty bucket: 1 and 2 fit (remaining 3, then 1), 9 never fits, the next 1
        // takes the last unit, and the one after it is refused.
        let allowed: Vec<bool> = decide_steps(&g, &quantities, T0, None)
            .iter()
            .map(|d| d.allowed)
            .collect();
        assert_eq!(allowed, [true, true, true, false, true, false, true]);
    }

    #[test]
    fn zero_one_one() {
        let g = Gcra::new(0, 1, 1);
        let mut b = Bucket::default();
        assert_eq!(b.call(&g, 1, T0), [0, 1, 0, -1, 1]);
        assert_eq!(b.call(&g, 1, T0 + 100), [1, 1, 0, 1, 1]);
    }

    #[test]
    fn five_ten_one_six_allowed_then_refused() {
        let g = Gcra::new(5, 10, 1);
        assert_eq!(g.emission, 100 * MS);
        let mut b = Bucket::default();
        let mut now = T0;
        for i in 0..6i64 {
            assert_eq!(b.call(&g, 1, now), [0, 6, 5 - i, -1, 1], "call {i}");
            now += 50;
        }
        assert_eq!(b.call(&g, 1, now), [1, 6, 0, 1, 1]);
        let d = decide(&g, 1, now, Some(T0 + 600 * MS));
        assert_eq!(d.retry_after, Some(100 * MS - 300));
        assert_eq!(d.reply().retry_after_ms, 100);
        assert_eq!(d.retry_after_secs(), Some(1));
    }

    #[test]
    fn quantity_above_the_limit_never_fits_and_writes_nothing() {
        let g = Gcra::new(5, 10, 1);
        let mut b = Bucket::default();
        assert_eq!(b.call(&g, 7, T0), [1, 6, 6, -1, 0]);
        assert!(!b.exists(T0));
        let d = decide(&g, 7, T0, None);
        assert_eq!((d.retry_after, d.write), (None, Write::Nothing));
        assert_eq!(d.reply().retry_after_ms, -1);
        // Exactly the limit fits.
        assert_eq!(b.call(&g, 6, T0 + 10), [0, 6, 0, -1, 1]);
        assert!(b.exists(T0 + 10));
    }

    #[test]
    fn quantity_equal_to_the_limit_on_a_fresh_key() {
        let g = Gcra::new(15, 30, 60);
        let d = decide(&g, 16, T0, None);
        assert_eq!(
            d.reply(),
            Reply {
                allowed: true,
                limit: 16,
                remaining: 0,
                retry_after: -1,
                reset_after: 32,
                retry_after_ms: -1,
                reset_after_ms: 32_000,
            }
        );
        assert_eq!(
            d.write,
            Write::Set {
                tat: T0 + 32 * SEC,
                expire_ms: 32_000
            }
        );
    }

    #[test]
    fn quantity_zero_on_a_fresh_key_peeks_and_leaves_no_key() {
        for (burst, count, period) in [(15, 30, 60), (0, 1, 1), (5, 10, 1), (1_000_000, 1, 1)] {
            let g = Gcra::new(burst, count, period);
            let mut b = Bucket::default();
            let l = g.limit as i64;
            assert_eq!(b.call(&g, 0, T0), [0, l, l, -1, 0]);
            assert!(!b.exists(T0));
            assert_eq!(decide(&g, 0, T0, None).write, Write::Nothing);
        }
    }

    #[test]
    fn refused_requests_write_nothing() {
        let g = Gcra::new(0, 1, 1);
        let d = decide(&g, 1, T0, Some(T0 + SEC));
        assert!(!d.allowed);
        assert_eq!(d.write, Write::Nothing);
    }

    #[test]
    fn expiry_is_the_time_until_full_truncated_to_ms() {
        let g = Gcra::new(0, 3, 1);
        // EI = 333333 µs (1/3 s truncated at µs, as the double division truncates at ns).
        assert_eq!(g.emission, 333_333);
        let d = decide(&g, 1, T0, None);
        assert_eq!(
            d.write,
            Write::Set {
                tat: T0 + 333_333,
                expire_ms: 333
            }
        );
        assert_eq!(d.reply().reset_after_ms, 334);
        assert_eq!(d.reply().reset_after, 1);
        // A bucket less than a millisecond from full leaves no key.
        let g = Gcra::new(0, 1_000_000, 1);
        assert_eq!(decide(&g, 1, T0, None).write, Write::Delete);
    }

    #[test]
    fn seconds_round_like_redis_cell() {
        assert_eq!(cell_secs(2 * SEC), 2);
        assert_eq!(cell_secs(2 * SEC + 400), 2);
        assert_eq!(cell_secs(2 * SEC + 300_000), 3);
        assert_eq!(cell_secs(500), 0);
        assert_eq!(cell_secs(500 * MS), 1);
        assert_eq!(cell_secs(SEC + MS), 2);
        assert_eq!(ceil_ms(0), 0);
        assert_eq!(ceil_ms(1), 1);
        assert_eq!(ceil_ms(1_000), 1);
        assert_eq!(ceil_ms(1_001), 2);
    }

    #[test]
    fn remaining_truncates_toward_zero() {
        // A TAT beyond the tolerance (a policy changed under an existing key): a headroom of
        // less than one interval below zero is 0, as redis-cell's integer division gives.
        let g = Gcra::new(0, 1, 1);
        let d = decide(&g, 0, T0, Some(T0 + SEC + 500 * MS));
        assert_eq!(d.remaining, 0);
        let d = decide(&g, 0, T0, Some(T0 + 5 * SEC));
        assert_eq!(d.remaining, 0);
    }

    #[test]
    fn the_caps_do_not_overflow() {
        let g = Gcra::new(1_000_000, 1, 31_536_000);
        assert_eq!(g.tolerance, 31_536_000 * SEC * 1_000_001);
        let d = decide(&g, 1_000_000, T0, None);
        assert!(d.allowed);
        assert_eq!(d.remaining, 1);
        assert_eq!(d.reply().reset_after, 31_536_000_000_000);
        assert_eq!(g.window_secs(), 31_536_031_536_000);
    }

    #[test]
    fn sliding_log_replies() {
        let w = Window {
            kind: WindowKind::Sliding,
            limit: 3,
            period: 10 * SEC,
        };
        let seen = |now, count, kth, newest| WindowSeen {
            now,
            count,
            kth,
            newest,
        };
        let d = w.decide(1, &seen(T0, 0, None, None));
        assert_eq!(
            (d.allowed, d.remaining, d.retry_after, d.reset_after),
            (true, 2, None, 10 * SEC)
        );
        // Three units at T0, T0+1s, T0+2s; a fourth at T0+3s waits for the first to leave.
        let d = w.decide(1, &seen(T0 + 3 * SEC, 3, Some(T0), Some(T0 + 2 * SEC)));
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(7 * SEC));
        assert_eq!(d.reset_after, 9 * SEC);
        assert_eq!(d.reply().retry_after, 7);
        assert_eq!(d.reply().retry_after_ms, 7_000);
        // A peek on an empty log.
        let d = w.decide(0, &seen(T0, 0, None, None));
        assert_eq!((d.allowed, d.remaining, d.reset_after), (true, 3, 0));
        // More than the limit never fits.
        let d = w.decide(4, &seen(T0, 0, None, None));
        assert_eq!((d.allowed, d.retry_after), (false, None));
        assert_eq!(d.reply().retry_after, -1);
    }

    #[test]
    fn fixed_window_replies() {
        let w = Window {
            kind: WindowKind::Fixed,
            limit: 2,
            period: 60 * SEC,
        };
        // T0 is 34 s into its minute.
        assert_eq!(w.window_end(T0), T0 + 26 * SEC);
        let seen = |now, count| WindowSeen {
            now,
            count,
            kth: None,
            newest: None,
        };
        let d = w.decide(1, &seen(T0, 1));
        assert_eq!(
            (d.allowed, d.remaining, d.retry_after, d.reset_after),
            (true, 0, None, 26 * SEC)
        );
        let d = w.decide(1, &seen(T0 + 500 * MS, 2));
        assert_eq!((d.allowed, d.remaining), (false, 0));
        assert_eq!(d.retry_after, Some(25_500 * MS));
        assert_eq!(d.reply().retry_after, 26);
    }
}
