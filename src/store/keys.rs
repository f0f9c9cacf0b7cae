//! The only place keys are spelled: `<prefix><kind>:{<tag>}:<rest>`.
//!
//! The `{tag}` is the Redis Cluster hash tag: every key one script or multi-key command touches
//! shares it, so they land in one slot (DESIGN.md "Redis rules").

use crate::types::{Day, Month, Name, UserId};

/// Users per cohort chunk: 2^20 bits = 128 KiB per chunk key, so a check-in by user
/// 4294967295 allocates one small chunk, not a 512 MiB string.
pub const COHORT_CHUNK_BITS: u32 = 20;

/// Builds every key under one configured prefix.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// A user's check-ins for one month: bit `day - 1` is set when checked in.
    pub fn checkin_month(&self, user: UserId, month: Month) -> String {
        format!("{}ck:{{{user}}}:{month}", self.prefix)
    }

    /// One chunk of a day's cohort bitmap: bit `user mod 2^20` of chunk `user >> 20`.
    /// Tagged by chunk, so the days of a chunk share a slot and a day's chunks spread out.
    pub fn cohort_chunk(&self, chunk: u32, day: Day) -> String {
        format!("{}ckd:{{{chunk}}}:{day}", self.prefix)
    }

    /// The set of cohort chunk numbers ever written, so stats never scan the keyspace.
    pub fn cohort_registry(&self) -> String {
        format!("{}ckr:{{chunks}}", self.prefix)
    }

    /// A voucher: hash of `stock` (left), `sold`, `begin`, `end` (unix ms), `limit` (per user).
    pub fn voucher(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}", self.prefix)
    }

    /// A voucher's buyers: hash user id → orders bought.
    pub fn voucher_buyers(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:buyers", self.prefix)
    }

    /// A voucher's orders per user: hash user id → space-separated stream entry ids.
    pub fn voucher_user_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:user_orders", self.prefix)
    }

    /// A voucher's orders in sale order: a stream, one entry per order.
    pub fn voucher_orders(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:orders", self.prefix)
    }

    /// Order entries the ledger gave up on: a stream of copies with the reason.
    pub fn voucher_dead_letters(&self, voucher: &Name) -> String {
        format!("{}sk:{{{voucher}}}:dead", self.prefix)
    }

    /// The set of every voucher id ever created, so the ledger finds each order stream
    /// without `KEYS`/`SCAN` (one small key; the streams themselves stay in their own slots).
    pub fn voucher_registry(&self) -> String {
        format!("{}skr:{{vouchers}}", self.prefix)
    }
}

/// The hash tag Redis Cluster hashes for `key` (the whole key when it has none).
pub fn hash_tag(key: &str) -> &str {
    if let Some(open) = key.find('{') {
        if let Some(len) = key[open + 1..].find('}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_vouchers_keys_share_a_slot() {
        let keys = Keys::new("gw:");
        let v = Name::try_from("v1".to_owned()).unwrap();
        let all = [
            keys.voucher(&v),
            keys.voucher_buyers(&v),
            keys.voucher_user_orders(&v),
            keys.voucher_orders(&v),
            keys.voucher_dead_letters(&v),
        ];
        assert_eq!(all[0], "gw:sk:{v1}");
        assert!(all.iter().all(|k| hash_tag(k) == "v1"));
    }

    #[test]
    fn a_chunks_days_share_a_slot() {
        let keys = Keys::new("t:");
        let d1 = keys.cohort_chunk(3, Day::parse("2026-01-01").unwrap());
        let d2 = keys.cohort_chunk(3, Day::parse("2026-03-01").unwrap());
        assert_eq!(hash_tag(&d1), "3");
        assert_eq!(hash_tag(&d1), hash_tag(&d2));
    }
}
