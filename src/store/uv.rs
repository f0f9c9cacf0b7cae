//! Unique-visitor store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::types::{Day, Idempotency, Name, Once};
use crate::uv::{FoldDay, PageCounts, Recorded, UvStore};

impl UvStore for Store {
    async fn record(
        &self,
        page: &Name,
        day: Day,
        visitors: &[String],
        expire_at: i64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Recorded>, StoreError> {
        dispatch!(self, "uv.record", s => s.record(page, day, visitors, expire_at, idem).await)
    }
    async fn page_counts(&self, page: &Name, days: &[Day]) -> Result<PageCounts, StoreError> {
        dispatch!(self, "uv.page_counts", s => s.page_counts(page, days).await)
    }
    async fn union(&self, pages: &[Name], days: &[Day]) -> Result<u64, StoreError> {
        dispatch!(self, "uv.union", s => s.union(pages, days).await)
    }
    async fn merge(
        &self,
        sources: &[Name],
        into: &Name,
        days: &[FoldDay],
    ) -> Result<u32, StoreError> {
        dispatch!(self, "uv.merge", s => s.merge(sources, into, days).await)
    }
}
