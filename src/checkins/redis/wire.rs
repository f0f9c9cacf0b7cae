//! What the check-in backend's calls share: the keys of a user's months and of the cohort
//! chunks, and the reading of a bitmap reply.

use fred::prelude::*;

use crate::store::keys::{day_str, Keys};

use crate::types::{Day, Month, UserId};

pub(super) fn bytes_of(v: &Value) -> &[u8] {
    match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.as_bytes(),
        _ => &[],
    }
}

/// The keys of this domain (every one under its hash tag: see `crate::store::keys`).
impl Keys {
    /// A user's check-ins for one month: bit `day - 1` is set when checked in.
    #[cfg(test)]
    pub(crate) fn checkin_month(&self, user: UserId, month: Month) -> String {
        self.checkin_months(user, &[month]).remove(0)
    }

    /// [`Self::checkin_month`] of each of `months`, the user's part formatted once, since a
    /// check-in names every retained month.
    pub(crate) fn checkin_months(&self, user: UserId, months: &[Month]) -> Vec<String> {
        let base = self.join(&["ck:{", itoa::Buffer::new().format(user.0), "}:"]);
        months
            .iter()
            .map(|month| {
                let mut key = String::with_capacity(base.len() + 7);
                key.push_str(&base);
                key.push_str(std::str::from_utf8(&month.text()).unwrap_or_default());
                key
            })
            .collect()
    }

    /// One chunk of a day's cohort bitmap: bit `user mod 2^20` of chunk `user >> 20`.
    /// Tagged by chunk, so the days of a chunk share a slot and a day's chunks spread out.
    pub(crate) fn cohort_chunk(&self, chunk: u32, day: Day) -> String {
        self.join(&[
            "ckd:{",
            itoa::Buffer::new().format(chunk),
            "}:",
            day_str(&day.text()),
        ])
    }

    /// The set of cohort chunk numbers ever written, so stats never scan the keyspace.
    pub(crate) fn cohort_registry(&self) -> String {
        self.join(&["ckr:{chunks}"])
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;
    use crate::store::keys::hash_tag;

    #[test]
    fn a_users_months_share_a_slot() {
        let keys = Keys::new("gw:");
        let a = keys.checkin_month(UserId(7), Month::parse("2026-01").unwrap());
        let b = keys.checkin_month(UserId(7), Month::parse("2025-12").unwrap());
        assert_eq!(a, "gw:ck:{7}:2026-01");
        assert_eq!(hash_tag(&a), hash_tag(&b));
        assert_ne!(
            hash_tag(&a),
            hash_tag(&keys.checkin_month(UserId(8), Month::parse("2026-01").unwrap()))
        );
    }

    #[test]
    fn a_chunks_days_share_a_slot() {
        let keys = Keys::new("t:");
        let d1 = keys.cohort_chunk(3, Day::parse("2026-01-01").unwrap());
        let d2 = keys.cohort_chunk(3, Day::parse("2026-03-01").unwrap());
        assert_eq!(d1, "t:ckd:{3}:2026-01-01");
        assert_eq!(hash_tag(&d1), hash_tag(&d2));
        assert_eq!(keys.cohort_registry(), "t:ckr:{chunks}");
    }
}
