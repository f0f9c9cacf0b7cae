//! Validated identifiers shared by the domains (docs/api.md "Identifiers"). Input is parsed into
//! these at the edge; past the handlers nothing re-validates, and no raw string reaches a key.

mod dates;

pub use dates::{Day, Month};

use std::fmt;

use serde::{Deserialize, Serialize};

/// A user id: an integer `0..=4294967295`, because it is a bitmap offset.
///
/// In the OpenAPI document every `user_id` (fields and path parameters) is written
/// `value_type = i64, minimum = 0, maximum = 4294967295`: utoipa gives a `u32` `format: int32`,
/// and a client generated in a typed language then overflows above 2^31.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value", into = "u32")]
pub struct UserId(pub u32);

impl From<UserId> for u32 {
    fn from(u: UserId) -> u32 {
        u.0
    }
}

impl UserId {
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "user_id must be an integer 0..=4294967295, got {s:?}"
            ));
        }
        s.parse::<u32>()
            .map(Self)
            .map_err(|_| format!("user_id must be an integer 0..=4294967295, got {s:?}"))
    }
}

// Path segments arrive as strings, JSON bodies as numbers: accept both, nothing else.
impl TryFrom<serde_json::Value> for UserId {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        match &v {
            serde_json::Value::String(s) => Self::parse(s),
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Self)
                .ok_or_else(|| format!("user_id must be an integer 0..=4294967295, got {n}")),
            other => Err(format!(
                "user_id must be an integer 0..=4294967295, got {other}"
            )),
        }
    }
}

/// Input a domain refuses, in the domain's own terms; the HTTP layer maps it to a problem
/// document (`From<Refused> for ApiError`), so domain cores never name the HTTP error type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Malformed or out of range: 400 `invalid_argument`.
    #[error("{0}")]
    Invalid(String),
    /// Well-formed but impossible (a future date): 422 `unprocessable`.
    #[error("{0}")]
    Unprocessable(String),
}

impl Refused {
    /// A 400 refusal with `detail`.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::Invalid(detail.into())
    }
}

/// A write made under an `Idempotency-Key` (docs/api.md "Conventions").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotency {
    /// SHA-256 (hex) of the client's key: the key itself never reaches the store.
    pub key: String,
    /// What the request asked for: a repeat under the same key must ask the same.
    pub fingerprint: String,
}

/// How long the first reply to an idempotent write is kept (docs/api.md: 24 h).
pub const IDEMPOTENCY_SECS: u64 = 86_400;

impl Idempotency {
    /// What a write under this key comes to when the key already holds an outcome, recorded
    /// with `fingerprint`: that outcome for the same request, [`Once::KeyReused`] for another.
    pub fn replay<T>(&self, fingerprint: &str, first: T) -> Once<T> {
        if fingerprint == self.fingerprint {
            Once::Replayed(first)
        } else {
            Once::KeyReused
        }
    }

    /// The key of `idem` as a store key's last part: empty without one (scripts then skip it).
    pub fn key_of(idem: Option<&Self>) -> &str {
        idem.map_or("", |i| i.key.as_str())
    }

    /// A script's last two arguments for `idem`: its fingerprint (empty without one) and how
    /// long the outcome is kept.
    pub fn script_args(idem: Option<&Self>) -> [String; 2] {
        let fingerprint = idem.map_or_else(String::new, |i| i.fingerprint.clone());
        [fingerprint, IDEMPOTENCY_SECS.to_string()]
    }
}

/// What an idempotent write came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Once<T> {
    /// Done now.
    Now(T),
    /// The key was seen with the same request: its first outcome; nothing changed.
    Replayed(T),
    /// The key was seen with a different request: nothing changed.
    KeyReused,
}

/// SHA-256 of `bytes` as lowercase hex: how credentials and client-chosen keys are named in
/// configuration and in the store, never in clear.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `user_id` in a JSON body: a number only. JSON fields take only their declared type, so
/// `"7"` is a 400 here; path segments arrive as text and go through [`UserId`]'s own parsing.
pub fn json_user_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<UserId, D::Error> {
    use serde::de::Error;
    let n = u64::deserialize(d)?;
    u32::try_from(n).map(UserId).map_err(|_| {
        D::Error::custom(format!(
            "user_id must be an integer 0..=4294967295, got {n}"
        ))
    })
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The name rule as the OpenAPI descriptions state it. A macro, not a `const`, so that
/// `concat!` can put it after a parameter's own words.
macro_rules! name_rule {
    () => {
        "1-128 of [A-Za-z0-9._:@-]"
    };
}
pub(crate) use name_rule;

/// A name (`page`, `layer`, `member`, `voucher_id`, `filter`, rate-limit `key`):
/// 1–128 characters of `[A-Za-z0-9._:@-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(String);

impl Name {
    pub const MAX_LEN: usize = 128;

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `name` inside a caller's namespace (docs/clients.md "Who may do what"):
    /// `<namespace>|<name>`, the name the store keys a caller's rate-limit keys, locks and queues
    /// by. `|` is outside the name charset (and a namespace is `c:<client id>` or `ip:<address>`,
    /// neither of which holds one), so two callers' names never meet. Never shown to a caller.
    pub fn scoped(namespace: &str, name: &Name) -> Name {
        let mut text = String::with_capacity(namespace.len() + 1 + name.0.len());
        text.push_str(namespace);
        text.push('|');
        text.push_str(&name.0);
        Name(text)
    }

    /// A name the gateway itself wrote to the store and reads back (a pub/sub channel's
    /// suffix): it may be [`Name::scoped`], so it is not checked against the name rule. Braces
    /// never reach it (neither names nor namespaces hold one).
    pub fn from_store(text: String) -> Name {
        Name(text)
    }
}

impl TryFrom<String> for Name {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        let ok_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '@' | '-');
        if s.is_empty() || s.len() > Self::MAX_LEN || !s.chars().all(ok_char) {
            let shown: String = s.chars().take(40).collect();
            return Err(format!(
                "names are 1-128 characters of [A-Za-z0-9._:@-], got {shown:?}"
            ));
        }
        Ok(Self(s))
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A page a store read from an index for a listing: the items kept, each with its place `C`
/// (the listing's cursor), and where the read stopped when it examined its budget of index
/// entries before it found enough (the next page goes on from there; `None` when it found
/// them, or reached the end).
#[derive(Debug, Clone)]
pub struct Listing<C, T> {
    pub items: Vec<(C, T)>,
    pub stopped_at: Option<C>,
}

impl<C, T> Default for Listing<C, T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            stopped_at: None,
        }
    }
}

/// A listing read from an index whose entries live apart from what they name (another slot),
/// a read of entries at a time, each read's resources looked at all at once: where the next
/// read starts, and the page once it is complete (`limit` items found, the index's end, or
/// `examine` entries examined).
#[derive(Debug)]
pub struct Walk<C, T> {
    page: Listing<C, T>,
    cursor: Option<C>,
    examined: usize,
    limit: usize,
    examine: usize,
}

impl<C: Clone, T> Walk<C, T> {
    pub fn new(after: Option<C>, limit: usize, examine: usize) -> Self {
        Self {
            page: Listing::default(),
            cursor: after,
            examined: 0,
            limit,
            examine,
        }
    }

    /// Where the next read starts, and how many entries it takes (at most `per_call`).
    pub fn next_read(&self, per_call: usize) -> (Option<&C>, usize) {
        (
            self.cursor.as_ref(),
            (self.examine - self.examined).min(per_call),
        )
    }

    /// Takes one read's entries, with what the listing keeps of each (`None`: skipped) and
    /// whether more follow them: the page, once it is complete.
    pub fn take(
        &mut self,
        entries: Vec<C>,
        kept: Vec<Option<T>>,
        more: bool,
    ) -> Option<Listing<C, T>> {
        for (at, kept) in entries.into_iter().zip(kept) {
            self.examined += 1;
            self.cursor = Some(at.clone());
            if let Some(item) = kept {
                self.page.items.push((at, item));
                if self.page.items.len() == self.limit {
                    return Some(std::mem::take(&mut self.page));
                }
            }
        }
        if more && self.examined < self.examine {
            return None;
        }
        if more {
            self.page.stopped_at = self.cursor.take();
        }
        Some(std::mem::take(&mut self.page))
    }
}

/// A unix time in ms as the API writes instants: RFC 3339 in UTC with milliseconds.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Shorthands for unit tests: values from text known to be valid, and waiting for what
/// other tasks do.
#[cfg(test)]
pub(crate) mod testing {
    use std::future::Future;
    use std::time::Duration;

    use super::{Day, Name};

    /// The [`Day`] `YYYY-MM-DD`.
    pub(crate) fn day(text: &str) -> Day {
        Day::parse(text).expect("a valid day")
    }

    /// The [`Name`] `text`.
    pub(crate) fn name(text: &str) -> Name {
        Name::try_from(text.to_owned()).expect("a valid name")
    }

    /// Waits until `done` answers true, asking every 5 ms; after 10 s, panics saying `what`.
    pub(crate) async fn eventually<F, Fut>(what: &str, mut done: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !done().await {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_ends_at_the_limit_the_end_or_its_budget() {
        let kept = |n: &[u32]| n.iter().map(|i| (i % 2 == 0).then_some(*i)).collect();
        // Full at the limit: no stop.
        let mut walk = Walk::new(None, 2, 10);
        let page = walk.take(vec![1, 2, 3, 4, 5], kept(&[1, 2, 3, 4, 5]), true);
        let page = page.unwrap();
        assert_eq!((page.items.len(), page.stopped_at), (2, None));
        // Reads on while the budget lasts, then stops where it examined last.
        let mut walk = Walk::new(Some(0), 5, 4);
        assert_eq!(walk.next_read(3), (Some(&0), 3));
        assert!(walk.take(vec![1, 2, 3], kept(&[1, 2, 3]), true).is_none());
        assert_eq!(walk.next_read(3), (Some(&3), 1));
        let page = walk.take(vec![5], kept(&[5]), true).unwrap();
        assert_eq!((page.items, page.stopped_at), (vec![(2, 2)], Some(5)));
        // The end of the index.
        let mut walk = Walk::new(None, 5, 40);
        let page = walk.take(vec![2, 3], kept(&[2, 3]), false).unwrap();
        assert_eq!((page.items, page.stopped_at), (vec![(2, 2)], None));
    }

    #[test]
    fn user_ids() {
        assert_eq!(UserId::parse("0"), Ok(UserId(0)));
        assert_eq!(UserId::parse("4294967295"), Ok(UserId(u32::MAX)));
        for bad in [
            "",
            "-1",
            "+1",
            "4294967296",
            "1e3",
            " 1",
            "abc",
            "12345678901",
        ] {
            assert!(UserId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names() {
        assert!(Name::try_from("a.b_c:d@e-f9".to_owned()).is_ok());
        assert!(Name::try_from("x".repeat(128)).is_ok());
        for bad in ["", "a b", "a{b}", "a\nb", "é", "a/b"] {
            assert!(Name::try_from(bad.to_owned()).is_err(), "{bad:?}");
        }
        assert!(Name::try_from("x".repeat(129)).is_err());
    }

    #[test]
    fn days_and_months() {
        assert_eq!(Day::parse("2024-02-29").unwrap().to_string(), "2024-02-29");
        for bad in [
            "2023-02-29",
            "2024-1-05",
            "20240105",
            "1969-12-31",
            "2024-01-05T00",
        ] {
            assert!(Day::parse(bad).is_err(), "{bad}");
        }
        let feb = Month::parse("2024-02").unwrap();
        assert_eq!(feb.days(), 29);
        assert_eq!(feb.prev().to_string(), "2024-01");
        assert_eq!(
            Month::parse("2024-12").unwrap().next().to_string(),
            "2025-01"
        );
        for bad in ["2024-13", "2024-00", "2024-2", "24-02"] {
            assert!(Month::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn month_serials_count_months_and_text_round_trips() {
        let mut month = Month::parse("1970-01").unwrap();
        for _ in 0..(12 * 30) {
            let next = month.next();
            assert_eq!(next.serial(), month.serial() + 1);
            assert_eq!(Month::parse(&next.to_string()).unwrap(), next);
            month = next;
        }
        assert_eq!(Month::parse("2024-02").unwrap().serial(), 2024 * 12 + 1);
        assert_eq!(Month::parse("9999-12").unwrap().to_string(), "9999-12");
    }
}

#[cfg(test)]
mod properties {
    use chrono::NaiveDate;
    use proptest::prelude::*;

    use super::*;

    fn is_name_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '@' | '-')
    }

    proptest! {
        #[test]
        fn names_accept_exactly_the_documented_alphabet(s in "\\PC{0,140}") {
            let ok = !s.is_empty() && s.len() <= 128 && s.chars().all(is_name_char);
            prop_assert_eq!(Name::try_from(s.clone()).is_ok(), ok, "{:?}", s);
        }

        #[test]
        fn valid_names_round_trip(s in "[A-Za-z0-9._:@-]{1,128}") {
            let name = Name::try_from(s.clone()).unwrap();
            prop_assert_eq!(name.as_str(), s.as_str());
        }

        #[test]
        fn names_never_carry_key_syntax(s in ".*[{} \\n\\r\\t].*") {
            prop_assert!(Name::try_from(s).is_err());
        }

        #[test]
        fn user_ids_parse_every_u32_and_nothing_else(n in any::<u64>(), junk in "[^0-9]{1,3}") {
            let text = n.to_string();
            prop_assert_eq!(UserId::parse(&text).ok().map(|u| u64::from(u.0)), u32::try_from(n).ok().map(u64::from));
            let with_junk = format!("{text}{junk}");
            prop_assert!(UserId::parse(&with_junk).is_err());
        }

        #[test]
        fn days_round_trip_and_reject_garbage(y in 1970i32..=9999, m in 1u32..=12, d in 1u32..=31, s in "\\PC{0,12}") {
            let text = format!("{y:04}-{m:02}-{d:02}");
            match NaiveDate::from_ymd_opt(y, m, d) {
                Some(date) => prop_assert_eq!(Day::parse(&text).unwrap(), Day(date)),
                None => prop_assert!(Day::parse(&text).is_err()),
            }
            if let Ok(day) = Day::parse(&s) {
                prop_assert_eq!(serde_json::to_string(&day).unwrap(), format!("\"{s}\""));
                prop_assert_eq!(day.to_string(), s);
            }
            if let Ok(day) = Day::parse(&text) {
                prop_assert_eq!(serde_json::to_string(&day).unwrap(), format!("\"{text}\""));
            }
        }

        #[test]
        fn months_round_trip(y in 1970i32..=9999, m in 0u32..=13, s in "\\PC{0,9}") {
            let text = format!("{y:04}-{m:02}");
            prop_assert_eq!(Month::parse(&text).is_ok(), (1..=12).contains(&m));
            if let Ok(month) = Month::parse(&s) {
                prop_assert_eq!(month.to_string(), s);
            }
        }
    }
}
