//! Pure check-in arithmetic: month bitmasks, streaks, the retention window.

use std::collections::HashMap;

use chrono::Datelike;

use crate::types::{Day, Month};

/// Reads a month bitmap as Redis stores it (SETBIT offset `day - 1`, most significant bit of
/// the first byte first) into a mask whose bit `day - 1` is set for each checked-in day.
pub fn mask_from_bytes(bytes: &[u8]) -> u32 {
    (0..31u32)
        .filter(|d| {
            let byte = (d / 8) as usize;
            byte < bytes.len() && bytes[byte] & (0x80 >> (d % 8)) != 0
        })
        .fold(0, |m, d| m | (1 << d))
}

/// Days of the month (1-based) present in `mask`.
pub fn days(mask: u32, days_in_month: u32) -> Vec<u32> {
    (1..=days_in_month)
        .filter(|d| mask & (1 << (d - 1)) != 0)
        .collect()
}

/// Longest run of consecutive checked-in days within the month.
pub fn longest_streak(mask: u32, days_in_month: u32) -> u32 {
    let (mut best, mut run) = (0, 0);
    for d in 1..=days_in_month {
        if mask & (1 << (d - 1)) != 0 {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

/// Consecutive checked-in days ending today, or yesterday when today is not checked in yet,
/// crossing month boundaries, never reaching before `floor`.
pub fn current_streak(today: Day, floor: Day, months: &HashMap<Month, u32>) -> u32 {
    let checked = |d: Day| {
        months
            .get(&d.month())
            .is_some_and(|m| m & (1 << (d.0.day() - 1)) != 0)
    };
    let mut day = if checked(today) { today } else { today.pred() };
    let mut streak = 0;
    while day >= floor && checked(day) {
        streak += 1;
        day = day.pred();
    }
    streak
}

/// The months a current streak can span: from the oldest retained day's month to today's,
/// newest first.
pub fn window(today: Day, oldest: Day) -> Vec<Month> {
    let mut months = vec![today.month()];
    while *months.last().expect("never empty") > oldest.month() {
        let prev = months.last().expect("never empty").prev();
        months.push(prev);
    }
    months
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::testing::day;

    #[test]
    fn bytes_follow_setbit_order() {
        // SETBIT k 0 1 and SETBIT k 9 1 → 0x80 0x40: days 1 and 10.
        let mask = mask_from_bytes(&[0x80, 0x40]);
        assert_eq!(days(mask, 31), vec![1, 10]);
        assert_eq!(mask_from_bytes(&[]), 0);
        assert_eq!(days(mask_from_bytes(&[0xff; 4]), 30).len(), 30);
    }

    #[test]
    fn longest_run_within_a_month() {
        let mask = (1 << 0) | (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6);
        assert_eq!(longest_streak(mask, 31), 3);
        assert_eq!(longest_streak(0, 31), 0);
    }

    #[test]
    fn current_streak_crosses_months_and_allows_missing_today() {
        let mut months = HashMap::new();
        // 2026-01-30, 2026-01-31, 2026-02-01, 2026-02-02
        months.insert(Month::parse("2026-01").unwrap(), (1 << 29) | (1 << 30));
        months.insert(Month::parse("2026-02").unwrap(), 0b11);
        let floor = day("2025-01-01");
        assert_eq!(current_streak(day("2026-02-02"), floor, &months), 4);
        assert_eq!(
            current_streak(day("2026-02-03"), floor, &months),
            4,
            "today not yet"
        );
        assert_eq!(current_streak(day("2026-02-04"), floor, &months), 0);
        assert_eq!(
            current_streak(day("2026-02-02"), day("2026-02-01"), &months),
            2
        );
    }

    #[test]
    fn window_spans_retention() {
        let w = window(day("2026-03-05"), day("2025-12-31"));
        let names: Vec<String> = w.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["2026-03", "2026-02", "2026-01", "2025-12"]);
    }
}
