//! The GCRA arithmetic of redis-cell's `CL.THROTTLE` (docs/ratelimit.md), in whole microseconds:
//! shared by the rate-limit checks (`src/ratelimit/`) and the global limiter on every request
//! (`src/policies/http/limiter/`), so both answer alike.
//!
//! Both backends only read the clock and the stored TAT (theoretical arrival time) and write
//! the new one; every decision and every reply field is derived here, so the memory backend and
//! the Lua script answer alike by construction. The Lua script repeats only the comparison
//! that decides whether to write, since it must write atomically.
//!
//! redis-cell keeps nanoseconds; we keep whole microseconds (what `TIME` resolves), so the
//! stored TAT is a decimal µs string. Values here are `i128`: at the API's caps the tolerance
//! (`EI × L`) reaches 3.15e19 µs, past `i64` and far past the 2^53 a Lua double holds exactly,
//! which is why the script computes with (seconds, µs) pairs.

/// Microseconds per second.
pub(crate) const SEC: i128 = 1_000_000;
/// Microseconds per millisecond.
pub(crate) const MS: i128 = 1_000;

/// One rate: `count_per_period` per `period` seconds, with `max_burst` extra up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gcra {
    /// Emission interval: the cost of one unit, µs.
    pub emission: i128,
    /// `max_burst + 1`: the most units that fit at once.
    pub limit: u64,
    /// Delay variation tolerance `emission × limit`, µs: how far the TAT may run ahead of now.
    pub tolerance: i128,
}

impl Gcra {
    /// `count_per_period ≥ 1` and `period ≥ 1` (checked at the edge; zero is clamped to 1 here
    /// so the arithmetic never divides by zero).
    pub fn new(max_burst: u64, count_per_period: u64, period: u64) -> Self {
        // Integer division is the truncated double division redis-cell does, at µs precision.
        // At least 1 µs, which the API's caps guarantee anyway, so nothing divides by zero.
        let emission =
            (i128::from(period.max(1)) * SEC / i128::from(count_per_period.max(1))).max(1);
        let limit = max_burst.saturating_add(1);
        Self {
            emission,
            limit,
            tolerance: emission * i128::from(limit),
        }
    }

    /// Cost of `quantity` units, µs.
    pub fn increment(&self, quantity: u64) -> i128 {
        self.emission * i128::from(quantity)
    }

    /// Seconds an empty bucket takes to refill completely, rounded up (`RateLimit-Policy`'s `w`).
    pub fn window_secs(&self) -> i64 {
        ceil_div(self.tolerance, SEC)
    }
}

/// What the store must do after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Refused, a peek, or a bucket that is already full again: leave the key as it is.
    Nothing,
    /// Store `tat` (µs) with an expiry of `expire_ms` (> 0): the key vanishes once full again.
    Set { tat: i128, expire_ms: i128 },
    /// The new TAT is less than a millisecond away: the bucket is as good as full, no key.
    Delete,
}

/// One throttle decision, in µs. Turn it into the reply with [`Decision::reply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// µs until the same request would be allowed; `None` when allowed, or never (quantity
    /// above the limit): both are redis-cell's sentinel −1.
    pub retry_after: Option<i128>,
    /// µs until the bucket is full again.
    pub reset_after: i128,
    pub write: Write,
}

/// Decides a request for `quantity` units at `now` (µs) against the stored TAT (`None`: no key).
pub fn decide(gcra: &Gcra, quantity: u64, now: i128, stored: Option<i128>) -> Decision {
    let tat = stored.unwrap_or(now);
    let inc = gcra.increment(quantity);
    let new_tat = tat.max(now) + inc;
    // Exactly at the tolerance is still allowed.
    let limited = new_tat - now > gcra.tolerance;
    let (ttl, retry_after, write) = if limited {
        let retry = (inc <= gcra.tolerance).then(|| new_tat - gcra.tolerance - now);
        // A stored TAT is never behind now (its expiry is at most the TAT), except with a
        // clock that went backwards; never report a negative reset.
        (tat.max(now) - now, retry, Write::Nothing)
    } else {
        let ttl = new_tat - now;
        let write = if quantity == 0 {
            // A peek: the TAT is unchanged and its key (if any) already expires on time.
            Write::Nothing
        } else if ttl / MS > 0 {
            Write::Set {
                tat: new_tat,
                expire_ms: ttl / MS,
            }
        } else {
            Write::Delete
        };
        (ttl, None, write)
    };
    let headroom = gcra.tolerance - ttl;
    // Truncating division, as redis-cell's i64 division: a headroom within one emission
    // interval below zero is 0, not −1.
    let remaining = if headroom > -gcra.emission {
        u64::try_from(headroom / gcra.emission).unwrap_or(0)
    } else {
        0
    };
    Decision {
        allowed: !limited,
        limit: gcra.limit,
        remaining,
        retry_after,
        reset_after: ttl,
        write,
    }
}

/// Decides steps of `quantities` one after the other at one instant `now`, each against the TAT
/// the steps before it left (`stored` before the first): what the same steps would get sent one
/// by one at that instant. The batched store call (`ratelimit_gcra_many.lua`) takes the same
/// steps atomically and reports only the clock and the TAT it started from, so every reply is
/// derived here, as a single step's is.
pub fn decide_steps(
    gcra: &Gcra,
    quantities: &[u64],
    now: i128,
    stored: Option<i128>,
) -> Vec<Decision> {
    let mut tat = stored;
    quantities
        .iter()
        .map(|&quantity| {
            let d = decide(gcra, quantity, now, tat);
            match d.write {
                Write::Nothing => {}
                Write::Set { tat: new, .. } => tat = Some(new),
                Write::Delete => tat = None,
            }
            d
        })
        .collect()
}

/// Decides one request's steps on several buckets at one instant `now`, all or nothing
/// (docs/policies.md "Stacking"): `steps` are (budget, quantity, enforced) and `stored` each
/// bucket's TAT. Returns each bucket's decision and whether the request is admitted — no
/// enforced step refused — in which case (and only then) each allowed step's write is made.
/// A refused shadow step admits the request and leaves its own bucket as it was.
pub fn decide_all(
    steps: &[(Gcra, u64, bool)],
    now: i128,
    stored: &[Option<i128>],
) -> (Vec<Decision>, bool) {
    let decisions: Vec<Decision> = steps
        .iter()
        .zip(stored)
        .map(|((gcra, quantity, _), tat)| decide(gcra, *quantity, now, *tat))
        .collect();
    let admitted = steps
        .iter()
        .zip(&decisions)
        .all(|((_, _, enforce), d)| d.allowed || !enforce);
    (decisions, admitted)
}

/// A decision as `CL.THROTTLE` and `POST /v1/ratelimit/check` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub allowed: bool,
    pub limit: u64,
    pub remaining: u64,
    /// Seconds, rounded like redis-cell 0.4+; −1 when allowed or never.
    pub retry_after: i64,
    /// Seconds, rounded like redis-cell 0.4+.
    pub reset_after: i64,
    /// Milliseconds, rounded up; −1 when allowed or never.
    pub retry_after_ms: i64,
    /// Milliseconds, rounded up.
    pub reset_after_ms: i64,
}

impl Decision {
    pub fn reply(&self) -> Reply {
        Reply {
            allowed: self.allowed,
            limit: self.limit,
            remaining: self.remaining,
            retry_after: self.retry_after.map_or(-1, cell_secs),
            reset_after: cell_secs(self.reset_after),
            retry_after_ms: self.retry_after.map_or(-1, ceil_ms),
            reset_after_ms: ceil_ms(self.reset_after),
        }
    }

    /// Seconds until a refused request may be retried, rounded up (`Retry-After`); `None`
    /// when allowed or when it can never fit.
    pub fn retry_after_secs(&self) -> Option<i64> {
        self.retry_after.map(|us| ceil_div(us, SEC))
    }

    /// Seconds until the bucket is full again, rounded up (`RateLimit-Reset`).
    pub fn reset_after_secs(&self) -> i64 {
        ceil_div(self.reset_after, SEC)
    }
}

/// redis-cell 0.4+ rounding of a duration to seconds: whole seconds, plus one when the rest is
/// at least a millisecond (2.0004 s → 2, 2.3 s → 3, 0.0005 s → 0).
pub fn cell_secs(us: i128) -> i64 {
    let whole = us / SEC;
    let rest = us % SEC;
    saturate(whole + i128::from(rest >= MS))
}

/// A duration in whole milliseconds, rounded up.
pub fn ceil_ms(us: i128) -> i64 {
    ceil_div(us, MS)
}

pub(crate) fn ceil_div(a: i128, b: i128) -> i64 {
    saturate((a + b - 1).div_euclid(b))
}

pub(crate) fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacked_steps_are_all_or_nothing_and_shadow_steps_refuse_nothing() {
        let (wide, narrow) = (Gcra::new(9, 1, 1), Gcra::new(0, 1, 60));
        let now = 1_000 * SEC;
        // The narrow bucket is spent: an enforced step there refuses the request, and the
        // wide bucket's decision (allowed on its own) is not to be written.
        let spent = Some(now + 60 * SEC);
        let (d, admitted) = decide_all(&[(wide, 1, true), (narrow, 1, true)], now, &[None, spent]);
        assert!(!admitted);
        assert!(d[0].allowed && !d[1].allowed);
        assert_eq!(d[1].retry_after, Some(60 * SEC));
        // The same refusal in shadow admits the request.
        let (d, admitted) = decide_all(&[(wide, 1, true), (narrow, 1, false)], now, &[None, spent]);
        assert!(admitted && !d[1].allowed);
        // Both fit: admitted, each with its own write.
        let (d, admitted) = decide_all(&[(wide, 1, true), (narrow, 1, true)], now, &[None, None]);
        assert!(admitted);
        assert_eq!(
            d[1].write,
            Write::Set {
                tat: now + 60 * SEC,
                expire_ms: 60_000
            }
        );
    }
}
