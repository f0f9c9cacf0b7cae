//! The rules of locks that do not depend on a backend: accepted ranges and fencing tokens.

/// Shortest and longest lease, ms (docs/api.md).
pub const TTL_MS: std::ops::RangeInclusive<u64> = 100..=3_600_000;
/// Longest server-side wait, ms (docs/api.md).
pub const MAX_WAIT_MS: u64 = 10_000;
/// How long the fencing counter outlives the lease it was last written with, ms. It is not
/// needed for correctness once expired (see [`next_token`]), only to keep tokens dense while a
/// name is in use, so an abandoned name costs one small key for an hour at most.
pub const FENCE_GRACE_MS: u64 = 3_600_000;

/// The fencing token of a new acquisition: `max(counter + 1, now)`, where `counter` is the
/// last token handed out for the name (`None` when its key expired or never existed) and
/// `now` the store's clock in µs (Redis `TIME`).
///
/// Why both: the counter alone makes tokens strictly increase while it exists, but it must
/// expire (anyone can invent lock names), and restarting from 1 afterwards would hand out old
/// tokens again. The clock term makes every token at least the µs time of its acquisition, and
/// a token only runs ahead of that time by one per acquisition made within the same µs, which
/// a single store cannot sustain (a script takes several µs). So once a counter has been gone
/// for its grace period, the clock is far past every token it ever held.
///
/// Clock assumption: the store's clock never steps back by more than [`FENCE_GRACE_MS`] (an
/// hour). A Redis restart from persistence keeps the counter (its expiry is absolute) or loses
/// writes whose tokens were about their own time, which the clock is already past. After a
/// failover to a replica that missed the last writes, the same holds if the primaries' clocks
/// agree (NTP) to better than the time since those writes.
pub fn next_token(counter: Option<u64>, now_us: u64) -> u64 {
    counter.map_or(0, |c| c.saturating_add(1)).max(now_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_763_725_414_000_000;

    #[test]
    fn tokens_follow_the_counter_or_the_clock_whichever_is_ahead() {
        assert_eq!(next_token(None, T0), T0);
        assert_eq!(next_token(Some(T0), T0), T0 + 1, "same µs: still bigger");
        assert_eq!(next_token(Some(T0 + 5), T0 + 2), T0 + 6);
        assert_eq!(next_token(Some(T0), T0 + 1_000), T0 + 1_000);
        // The counter expired: the clock alone is past every earlier token.
        assert!(next_token(None, T0 + FENCE_GRACE_MS * 1_000) > T0 + 1);
    }
}
