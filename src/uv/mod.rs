//! Unique visitors on HyperLogLog (PFADD/PFCOUNT/PFMERGE) with page views beside them: record
//! visits, a day or a range of one page (the range's union with per-day figures), the union
//! over several pages, and folding source pages into a target page day by day.
//!
//! Per page and day, one HyperLogLog (`uv:{page}:DATE`) and one counter (`pv:{page}:DATE`)
//! under the page's hash tag, so a record is one script and a page's range is one slot.
//! Work across pages spans slots: the stores combine it without a cross-slot command.
//!
//! A visitor id reaches a HyperLogLog as its keyed hash ([`VisitorKey`]), never as sent: a
//! HyperLogLog picks a register and its value from a public hash of the element, so a client
//! that chooses its ids could pick ones that set high registers and turn a page-day's counter
//! from a few bytes into 12 KiB with one visit (docs/uv.md "Visitor ids are hashed").

pub mod hll;
mod http;
mod memory;
mod redis;
mod settings;

pub use http::{Domain, UvState};
pub use settings::{Flags, Settings};

use crate::calendar::Retention;
use crate::store::error::StoreError;
use crate::types::{Day, Idempotency, Name, Once, Refused};

pub use crate::store::channels::{Heard, Listening};

/// Longest range, in days, inclusive (docs/api.md).
pub const MAX_RANGE_DAYS: i64 = 366;
/// Most pages one union may name.
pub const MAX_PAGES: usize = 100;
/// Most sources one merge may name. A merge moves every source's day HyperLogLogs (up to
/// 12 KiB each) into the target's slot, so this bounds one request to 20 × 366 of them (a few
/// seconds at worst); merging is associative and idempotent, so more sources take more calls.
pub const MAX_MERGE_SOURCES: usize = 20;
/// The page name that collides with `POST /v1/uv/merge`.
pub const RESERVED_PAGE: &str = "merge";

/// The secret visitor ids are hashed with before they are counted (SipHash-2-4, 64 bits):
/// without it no one can tell which register an id sets. Kept by each backend for its store:
/// `GATEWAY_UV_VISITOR_KEY` when set, else generated once and kept in the store, so every
/// gateway on one store counts a visitor alike.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct VisitorKey([u8; 16]);

/// A hashed visitor id: what a HyperLogLog is given.
pub type Visitor = [u8; 8];

impl VisitorKey {
    /// The key made from a secret of any length (its SHA-256, first half).
    pub fn from_secret(secret: &[u8]) -> Self {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(secret);
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        Self(key)
    }

    /// A fresh secret to keep (32 hex characters), for [`Self::from_secret`].
    pub fn new_secret() -> String {
        use rand::RngCore;
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `visitor`'s keyed hash. 64 bits: a HyperLogLog hashes its elements to 64 bits anyway,
    /// so two visitors that collide here are as rare as a collision there.
    pub fn hash(&self, visitor: &str) -> Visitor {
        use std::hash::Hasher;
        let mut hasher = siphasher::sip::SipHasher24::new_with_key(&self.0);
        hasher.write(visitor.as_bytes());
        hasher.finish().to_le_bytes()
    }
}

// By hand, so the key never reaches a log line through `{:?}`.
impl std::fmt::Debug for VisitorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VisitorKey(..)")
    }
}

/// What recording visits did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The day recorded (on a replay, the first request's day, which may be another day when
    /// the request left the date to "today").
    pub day: Day,
    /// True when the HyperLogLog changed (some visitor was probably new that day).
    pub changed: bool,
    /// The day's page views after this request.
    pub pv: u64,
}

/// One page's figures over a range of days.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageCounts {
    /// `(uv, pv)` per day, in the order asked.
    pub daily: Vec<(u64, u64)>,
    /// Distinct visitors over all the days (the union, not the sum).
    pub uv: u64,
}

/// A day to fold in a merge, with the expiry its target key gets if the merge creates it.
#[derive(Debug, Clone, Copy)]
pub struct FoldDay {
    pub day: Day,
    pub expire_at: i64,
}

/// Visits to record on a page: who, on which day, until when the day's keys are kept (unix
/// seconds), under which idempotency key. `secret` is `GATEWAY_UV_VISITOR_KEY`: the backend
/// hashes the visitors with the key made of it, or with the one its store keeps when unset.
#[derive(Debug, Clone, Copy)]
pub struct NewVisits<'a> {
    pub day: Day,
    pub visitors: &'a [String],
    pub secret: Option<&'a str>,
    pub expire_at: i64,
    pub idem: Option<&'a Idempotency>,
}

/// Pages to fold into another, day by day.
#[derive(Debug, Clone, Copy)]
pub struct Merge<'a> {
    pub sources: &'a [Name],
    pub days: &'a [FoldDay],
}

crate::store::store_trait! {
    /// What a unique-visitor backend must do. Every method is one logical store operation.
    pub(crate) trait UvStore {
        /// Adds `visitors` (at least one) to `page`'s HyperLogLog for `day`, adds their number to
        /// its page views, and sets both keys to expire at `expire_at` (unix seconds). Under `idem`
        /// the same step first looks for the key's first outcome and records this one (24 h).
        async fn uv_record(&self, page: &Name, visits: NewVisits<'_>)
            -> Result<Once<Recorded>, StoreError> = "uv.record";
        /// Per-day figures and the union over `days` for one page; missing days are zeros.
        async fn uv_page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> = "uv.page_counts";
        /// Listens to `page`'s visits: each run that records some publishes the day it recorded
        /// (one subscription per page per process, however many listen).
        async fn uv_listen(&self, page: &Name) -> Result<Listening, StoreError> = _;
        /// Distinct visitors over every page and day given.
        async fn uv_union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> = "uv.union";
        /// For each day, folds the union of `sources` on that day into `into` on that day (page
        /// views untouched). Returns the number of days on which some source had visitors.
        async fn uv_merge(&self, into: &Name, merge: Merge<'_>) -> Result<u32, StoreError> = "uv.merge";
    }
}

/// Refuses the reserved page name.
pub fn page(name: Name) -> Result<Name, Refused> {
    if name.as_str() == RESERVED_PAGE {
        return Err(Refused::Invalid(format!(
            "page name {RESERVED_PAGE:?} is reserved"
        )));
    }
    Ok(name)
}

/// The days `from..=to`, refusing a backwards or longer than [`MAX_RANGE_DAYS`] range with 400.
pub fn days(from: Day, to: Day) -> Result<Vec<Day>, Refused> {
    crate::calendar::days_between(from, to, MAX_RANGE_DAYS)
}

/// Which days visits may be recorded on (`retention_days` ending `today`), and when their keys
/// expire.
pub(crate) fn retention(today: Day, retention_days: u32) -> Retention {
    Retention::new(today, retention_days, "unique-visitor")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::testing::day;
    use crate::types::testing::name;

    #[test]
    fn ranges_are_inclusive_and_bounded() {
        assert_eq!(days(day("2026-01-01"), day("2026-01-01")).unwrap().len(), 1);
        assert_eq!(
            days(day("2024-01-01"), day("2024-12-31")).unwrap().len(),
            366
        );
        assert!(days(day("2025-01-01"), day("2026-01-02")).is_err());
        assert!(days(day("2026-01-02"), day("2026-01-01")).is_err());
    }

    #[test]
    fn visitors_hash_by_key() {
        let a = VisitorKey::from_secret(b"a secret of sixteen");
        let b = VisitorKey::from_secret(b"another secret, too");
        assert_eq!(a.hash("user-42"), a.hash("user-42"));
        assert_ne!(a.hash("user-42"), a.hash("user-43"));
        assert_ne!(a.hash("user-42"), b.hash("user-42"));
        assert_ne!(VisitorKey::new_secret(), VisitorKey::new_secret());
        assert_eq!(format!("{a:?}"), "VisitorKey(..)");
    }

    #[test]
    fn merge_is_reserved() {
        assert!(page(name("merge")).is_err());
        assert!(page(name("Merge")).is_ok());
    }
}
