//! The store side of the global limiter and the limit policies stacked on it: GCRA buckets per
//! client (and per policy identity), spent in order. The limiter (`src/middleware/ratelimit/`)
//! names this trait, not a domain; the rate-limit domain's backends implement it, since they keep
//! every GCRA bucket (under their own key kinds, so a check key can never name a limiter's
//! bucket).

use super::error::StoreError;
use crate::gcra::{Decision, Gcra};

/// One bucket of a request that several limits apply to (docs/policies.md "Stacking").
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The global layer's client (`c:<id>`, `ip:<address>`), or a policy's identity.
    pub identity: &'a str,
    /// `None`: the global layer's bucket of `identity`; else the named policy's.
    pub policy: Option<&'a str>,
    pub gcra: &'a Gcra,
    pub quantity: u64,
    /// A refusal here refuses the request (and spends nothing anywhere); a shadow limit's
    /// refusal only leaves its own bucket as it was.
    pub enforce: bool,
}

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
        /// One request's steps on several buckets, all or nothing: each bucket's decision, and
        /// every bucket spent only when no enforced step is refused (shadow steps that are
        /// refused are left as they were). One atomic call where the buckets share a store
        /// (one Redis, one Cluster slot); docs/policies.md "On a Cluster" for the rest.
        async fn budget_spend_all(&self, steps: &[Step<'_>])
            -> Result<Vec<Decision>, StoreError> = "ratelimit.throttle_all";
    }
}
