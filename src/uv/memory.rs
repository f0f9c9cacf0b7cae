//! Unique visitors in memory: per page and day, a Redis-compatible HyperLogLog
//! ([`crate::uv::hll`]) and a page-view counter, expiring together like the Redis keys.

use std::collections::{BTreeMap, HashMap};

use crate::store::error::StoreError;
use crate::store::memory::{reclaim, Locked, MemoryStore, Purge};
use crate::store::slots::{Kept, Slot};
use crate::types::{Day, Name, Once, IDEMPOTENCY_SECS};
use crate::uv::hll::Hll;
use crate::uv::{Heard, Listening, Merge, NewVisits, PageCounts, Recorded, UvStore, VisitorKey};

/// This domain's state in a memory store.
static STATE: Slot<Locked<State>> = Slot::new();

/// The key this store's visitors are hashed with: made of `GATEWAY_UV_VISITOR_KEY`, or
/// generated, on the first visit. State per process, like every count here.
static KEY: Slot<Key> = Slot::new();

#[derive(Default)]
struct Key(std::sync::OnceLock<VisitorKey>);

impl Kept for Key {}

#[derive(Debug, Default)]
struct State {
    /// page → day → that day's visitors and views.
    pages: HashMap<Name, BTreeMap<Day, Entry>>,
    /// (page, idempotency key digest) → (fingerprint, first outcome, expires at unix s).
    replies: HashMap<(Name, String), (String, Recorded, i64)>,
}

#[derive(Debug)]
struct Entry {
    visitors: Hll,
    pv: u64,
    /// Unix seconds; past it the entry reads as absent and the purge drops it.
    expires_at: i64,
}

impl State {
    fn get(&self, page: &Name, day: Day, now: i64) -> Option<&Entry> {
        self.pages
            .get(page)?
            .get(&day)
            .filter(|e| e.expires_at > now)
    }

    fn entry(&mut self, page: &Name, day: Day, now: i64, expire_at: i64) -> &mut Entry {
        if !self.pages.contains_key(page) {
            self.pages.insert(page.clone(), BTreeMap::new());
        }
        let days = self.pages.get_mut(page).expect("inserted above");
        let e = days.entry(day).or_insert(Entry {
            visitors: Hll::new(),
            pv: 0,
            expires_at: expire_at,
        });
        if e.expires_at <= now {
            // Expired but not purged yet: start afresh, as Redis would.
            e.visitors = Hll::new();
            e.pv = 0;
        }
        e.expires_at = expire_at;
        e
    }
}

impl Purge for State {
    fn purge(&mut self, now: i64) {
        for days in self.pages.values_mut() {
            days.retain(|_, e| e.expires_at > now);
        }
        reclaim(&mut self.pages, |_, days| !days.is_empty());
        reclaim(&mut self.replies, |_, (_, _, at)| *at > now);
    }
}

/// The store's clock in seconds.
fn now(store: &MemoryStore) -> i64 {
    store.clock().now_s()
}

/// A page's event channel in this process.
fn channel(page: &Name) -> String {
    format!("uv:{page}")
}

impl UvStore for MemoryStore {
    async fn uv_record(
        &self,
        page: &Name,
        visits: NewVisits<'_>,
    ) -> Result<Once<Recorded>, StoreError> {
        let key = *self.kept(&KEY).0.get_or_init(|| match visits.secret {
            Some(secret) => VisitorKey::from_secret(secret.as_bytes()),
            None => VisitorKey::from_secret(VisitorKey::new_secret().as_bytes()),
        });
        let mut s = self.state(&STATE);
        let now = now(self);
        if let Some(idem) = visits.idem {
            if let Some((fp, first, _)) = s
                .replies
                .get(&(page.clone(), idem.key.clone()))
                .filter(|(_, _, at)| *at > now)
            {
                return Ok(idem.replay(fp, *first));
            }
        }
        let e = s.entry(page, visits.day, now, visits.expire_at);
        let mut changed = false;
        for v in visits.visitors {
            changed |= e.visitors.add(&key.hash(v));
        }
        e.pv += visits.visitors.len() as u64;
        if self.channels().any() {
            let day = visits.day.text();
            let day = std::str::from_utf8(&day).unwrap_or_default();
            self.channels()
                .tell(&channel(page), Heard::Message(day.into()));
        }
        let done = Recorded {
            day: visits.day,
            changed,
            pv: e.pv,
        };
        if let Some(idem) = visits.idem {
            s.replies.insert(
                (page.clone(), idem.key.clone()),
                (
                    idem.fingerprint.clone(),
                    done,
                    now + IDEMPOTENCY_SECS as i64,
                ),
            );
        }
        Ok(Once::Now(done))
    }

    async fn uv_listen(&self, page: &Name) -> Result<Listening, StoreError> {
        Ok(self.channels().listen(&channel(page)))
    }

    async fn uv_page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> {
        let s = self.state(&STATE);
        let now = now(self);
        let mut all = Hll::new();
        let daily = days
            .iter()
            .map(|d| match s.get(page, *d, now) {
                Some(e) => {
                    all.merge(&e.visitors);
                    (e.visitors.count(), e.pv)
                }
                None => (0, 0),
            })
            .collect();
        Ok(PageCounts {
            daily,
            uv: all.count(),
        })
    }

    async fn uv_union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> {
        let now = now(self);
        let mut all = Hll::new();
        // One page per critical section, so a wide union never holds the lock for long.
        for page in pages {
            let s = self.state(&STATE);
            for d in days {
                if let Some(e) = s.get(page, *d, now) {
                    all.merge(&e.visitors);
                }
            }
        }
        Ok(all.count())
    }

    async fn uv_merge(&self, into: &Name, merge: Merge<'_>) -> Result<u32, StoreError> {
        let now = now(self);
        let Merge { sources, days } = merge;
        let mut folded = 0;
        // One day per critical section, for the same reason as in `union`.
        for fold in days {
            let mut s = self.state(&STATE);
            let mut day = Hll::new();
            let mut any = false;
            for src in sources {
                if let Some(e) = s.get(src, fold.day, now) {
                    day.merge(&e.visitors);
                    any = true;
                }
            }
            if any {
                let target = s.entry(into, fold.day, now, fold.expire_at);
                target.visitors.merge(&day);
                folded += 1;
            }
        }
        if folded > 0 && self.channels().any() {
            self.channels()
                .tell(&channel(into), Heard::Message("merged".into()));
        }
        Ok(folded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::testing::name;

    #[test]
    fn days_expire_with_retention() {
        let mut s = State::default();
        let page = name("home");
        let day = Day::parse("2026-11-21").unwrap();
        let e = s.entry(&page, day, 100, 200);
        e.visitors.add(b"v");
        e.pv = 1;
        assert!(s.get(&page, day, 199).is_some());
        assert!(s.get(&page, day, 200).is_none(), "expired reads as absent");
        let fresh = s.entry(&page, day, 250, 300);
        assert_eq!(
            (fresh.visitors.count(), fresh.pv),
            (0, 0),
            "and is rewritten afresh"
        );
        s.purge(299);
        assert_eq!(s.pages[&page].len(), 1);
        s.purge(300);
        assert!(s.pages.is_empty());
    }
}
