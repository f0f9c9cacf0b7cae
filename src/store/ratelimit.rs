//! Rate-limit store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::ratelimit::logic::{Decision, Gcra};
use crate::ratelimit::{Bucket, RateLimitStore};

impl RateLimitStore for Store {
    async fn throttle(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantity: u64,
    ) -> Result<Decision, StoreError> {
        dispatch!(self, "ratelimit.throttle", s => s.throttle(bucket, gcra, quantity).await)
    }
}
