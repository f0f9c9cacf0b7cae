//! The store side of the global limiter and the limit policies stacked on it: GCRA buckets per
//! client (and per policy identity), spent in order ([`BudgetStore`]), and the runtime
//! overrides ([`OverrideStore`]). The rate-limit domain's backends keep the buckets, since they
//! keep every GCRA bucket (under their own key kinds, so a check key can never name a
//! limiter's bucket); this domain's own backends keep the overrides.

use crate::gcra::{Decision, Gcra};
use crate::store::error::StoreError;

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

/// What storing an override did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Created,
    Replaced,
    /// The store holds as many overrides as it may (expired ones were dropped first).
    Full,
}

crate::store::store_trait! {
    /// The limiter's runtime overrides and denies (docs/policies.md "Overrides and denies"):
    /// entries `field → value` the store keeps for every instance, with a version that every
    /// change moves on, so instances poll one small value and read the whole set only when it
    /// moved. A value begins with its expiry (unix ms, 0: none) and `|`, so the store can drop
    /// expired entries without reading the rest.
    pub(crate) trait OverrideStore {
        /// Sets `field` to `value`; with `max` entries already (after dropping those expired
        /// at the store's clock) a new field is refused.
        async fn overrides_put(&self, field: &str, value: &str, max: u64)
            -> Result<Stored, StoreError> = "limiter.overrides_put";
        /// Removes `field`; whether it was there.
        async fn overrides_delete(&self, field: &str)
            -> Result<bool, StoreError> = "limiter.overrides_delete";
        /// The version: it changes whenever an entry does.
        async fn overrides_version(&self) -> Result<u64, StoreError> = "limiter.overrides_version";
        /// The version and every entry, read together.
        async fn overrides_all(&self) -> Result<(u64, Vec<(String, String)>), StoreError>
            = "limiter.overrides_all";
    }
}
