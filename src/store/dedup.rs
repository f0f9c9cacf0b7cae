//! Dedup store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::dedup::logic::Params;
use crate::dedup::{Added, DedupStore, FilterInfo, Policy, Reserved};
use crate::types::Name;

impl DedupStore for Store {
    async fn reserve_filter(
        &self,
        filter: &Name,
        params: Params,
        policy: Policy,
    ) -> Result<Reserved, StoreError> {
        dispatch!(self, "dedup.reserve_filter", s => s.reserve_filter(filter, params, policy).await)
    }
    async fn add_to_filter(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Added, StoreError> {
        dispatch!(self, "dedup.add_to_filter", s => s.add_to_filter(filter, items, policy).await)
    }
    async fn check_in_filter(
        &self,
        filter: &Name,
        items: &[String],
        policy: Policy,
    ) -> Result<Vec<bool>, StoreError> {
        dispatch!(self, "dedup.check_in_filter", s => s.check_in_filter(filter, items, policy).await)
    }
    async fn filter_info(&self, filter: &Name) -> Result<Option<FilterInfo>, StoreError> {
        dispatch!(self, "dedup.filter_info", s => s.filter_info(filter).await)
    }
}
