//! Rate-limit store calls, dispatched to the active backend.

use super::{Store, StoreError};
use crate::ratelimit::logic::{Decision, Gcra};
use crate::ratelimit::{Bucket, RateLimitStore};
use crate::types::{Idempotency, Once};

impl RateLimitStore for Store {
    async fn throttle_once(
        &self,
        bucket: &Bucket,
        gcra: &Gcra,
        quantity: u64,
        idem: Option<&Idempotency>,
    ) -> Result<Once<Decision>, StoreError> {
        dispatch!(self, "ratelimit.throttle", s => s.throttle_once(bucket, gcra, quantity, idem).await)
    }
}
