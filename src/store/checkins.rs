//! Check-in store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::checkins::{Calendar, CheckIn, CheckinStore, Cohort};
use crate::types::{Day, Month, UserId};

impl CheckinStore for Store {
    async fn check_in(
        &self,
        user: UserId,
        day: Day,
        cal: &Calendar,
    ) -> Result<CheckIn, StoreError> {
        dispatch!(self, "checkins.check_in", s => s.check_in(user, day, cal).await)
    }
    async fn months(&self, user: UserId, months: &[Month]) -> Result<Vec<u32>, StoreError> {
        dispatch!(self, "checkins.months", s => s.months(user, months).await)
    }
    async fn cohort(&self, days: &[Day]) -> Result<Cohort, StoreError> {
        dispatch!(self, "checkins.cohort", s => s.cohort(days).await)
    }
}
