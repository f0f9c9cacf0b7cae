//! The store side of the global limiter: one GCRA bucket per client, spent in order. The
//! limiter (`src/middleware/ratelimit/`) names this trait, not a domain; the rate-limit domain's
//! backends implement it, since they keep every GCRA bucket (under their own key kind for
//! clients, so a check key can never name a client's bucket).

use super::error::StoreError;
use crate::gcra::{Decision, Gcra};

// The operations keep the labels they were timed under when the limiter called the rate-limit
// store directly (`ratelimit.throttle`, `ratelimit.throttle_many`), so dashboards hold.
crate::store::store_trait! {
    /// What the global limiter asks of the store.
    pub(crate) trait BudgetStore {
        /// Spends `quantity` units of `client`'s budget under `gcra` if they fit.
        async fn budget_spend(&self, client: &str, gcra: &Gcra, quantity: u64)
            -> Result<Decision, StoreError> = "ratelimit.throttle";
        /// Several steps on `client`'s budget, in order, as one atomic call at one instant.
        async fn budget_spend_many(&self, client: &str, gcra: &Gcra, quantities: &[u64])
            -> Result<Vec<Decision>, StoreError> = "ratelimit.throttle_many";
    }
}
