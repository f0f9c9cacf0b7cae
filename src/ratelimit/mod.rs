//! Rate-limit checks: a GCRA that answers exactly like redis-cell's `CL.THROTTLE`
//! (docs/ratelimit.md), behind `POST /v1/ratelimit/check` and the global limiter (the limit
//! policies' tower layer, which spends its buckets through this domain's backends).
//!
//! A bucket is one stored TAT per key (`rl:{key}` for checks, `rlg:{client}` for the global
//! limiter), expiring when the bucket is full again, so an idle client costs nothing. Every
//! decision is one store round trip: the store reads its clock and the TAT and writes the new
//! TAT atomically; [`logic`] derives the decision and the reply from those microseconds.
//!
//! The check endpoint also offers the seeds' simple limiters (`algorithm`): a sliding log
//! (`rl:{key}:sw`, a sorted set of admitted units) and a fixed window (`rl:{key}:fw`, a
//! counter expiring at its window's end), each deciding in one atomic store step too.

mod http;
pub mod logic;
#[macro_use]
mod budget;
mod memory;
mod redis;
mod settings;

pub use http::{Domain, RatelimitState};
pub use settings::{Flags, Settings};

use crate::store::error::StoreError;
use crate::types::{Idempotency, Name, Once};

/// Whose bucket a decision draws from. The two namespaces never share a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// A key named by a caller of the check endpoint.
    Key(Name),
    /// A client of the global limiter: `c:<client id>` or `ip:<address>`.
    Client(String),
    /// A limit policy's bucket for one identity (docs/policies.md): `identity` is what the
    /// policy counts by (`c:web`, `ip:192.0.2.7`, `u:42`, `h:<sha256>`, `op`).
    Policy { identity: String, policy: String },
}

/// One bucket of a request several limits apply to: decided together, all or nothing
/// ([`RateLimitStore::ratelimit_throttle_all`]).
#[derive(Debug, Clone)]
pub struct Throttle<'a> {
    pub bucket: Bucket,
    pub gcra: &'a logic::Gcra,
    pub quantity: u64,
    /// Its refusal refuses the request; a shadow limit's only leaves its bucket alone.
    pub enforce: bool,
}

/// One spend on a limit (a GCRA or a window): how many units, under which idempotency key.
#[derive(Debug, Clone, Copy)]
pub struct Spend<'a, L> {
    pub limit: &'a L,
    pub quantity: u64,
    pub idem: Option<&'a Idempotency>,
}

crate::store::store_trait! {
    /// What a rate-limit backend must do: one atomic GCRA step per call.
    pub(crate) trait RateLimitStore {
        /// Spends `quantity` units of `bucket` under its GCRA if they fit (nothing is written when
        /// they do not, or when `quantity` is 0) and reports the decision. Under `idem` the same
        /// step first looks for the key's earlier decision (replayed from the clock and TAT it
        /// saw, so the reply is the first one exactly) and records this one for
        /// [`crate::types::IDEMPOTENCY_SECS`].
        async fn ratelimit_throttle_once(&self, bucket: &Bucket, spend: Spend<'_, logic::Gcra>)
            -> Result<Once<logic::Decision>, StoreError> = "ratelimit.throttle";

        /// One atomic step of a sliding-log or fixed-window limit on `key` (docs/api.md `algorithm`):
        /// spends `quantity` units if they fit and reports what the store saw, from which
        /// [`logic::Window::decide`] derives the reply. Under `idem` the first step's view is
        /// recorded and replayed, as for GCRA.
        async fn ratelimit_window_once(&self, key: &Name, spend: Spend<'_, logic::Window>)
            -> Result<Once<logic::WindowSeen>, StoreError> = "ratelimit.window";

        /// Several steps on one bucket, in order, as one atomic call at one instant: decides
        /// exactly what the steps taken one by one at that instant would. The default takes them
        /// one by one (a backend in this process gains nothing from batching).
        async fn ratelimit_throttle_many(
            &self,
            bucket: &Bucket,
            gcra: &logic::Gcra,
            quantities: &[u64],
        ) -> Result<Vec<logic::Decision>, StoreError> = "ratelimit.throttle_many" {
            let mut out = Vec::with_capacity(quantities.len());
            for &quantity in quantities {
                out.push(self.ratelimit_throttle(bucket, gcra, quantity).await?);
            }
            Ok(out)
        }

        /// One request's steps on several buckets, all or nothing: every bucket is spent only
        /// when no enforced step is refused ([`logic::decide_all`]). One atomic call where the
        /// buckets share a store; on a Cluster one per slot, with what a later slot refused
        /// given back in the earlier ones (docs/policies.md "On a Cluster").
        async fn ratelimit_throttle_all(&self, steps: &[Throttle<'_>])
            -> Result<Vec<logic::Decision>, StoreError> = "ratelimit.throttle_all";

        /// [`Self::ratelimit_throttle_once`] without an idempotency key.
        async fn ratelimit_throttle(&self, bucket: &Bucket, gcra: &logic::Gcra, quantity: u64)
            -> Result<logic::Decision, StoreError> {
            let spend = Spend { limit: gcra, quantity, idem: None };
            match self.ratelimit_throttle_once(bucket, spend).await? {
                Once::Now(d) | Once::Replayed(d) => Ok(d),
                Once::KeyReused => Err(StoreError::Internal(
                    "a throttle without a key was refused as a reused key".to_owned(),
                )),
            }
        }
    }
}
