//! The global limiter's budgets are GCRA buckets of their own kind (`Bucket::Client`), so each
//! backend's budget store is its rate-limit store; both implement the limiter's trait with this
//! one macro. The backend names the trait: this core keeps to its own store (docs/design.md).

/// Implements the global limiter's budget trait `$budget` (whose stacked steps are `$step`)
/// for `$store` on its client and policy buckets.
macro_rules! budget_on_client_buckets {
    ($budget:path, $step:ident, $store:ty) => {
        impl $budget for $store {
            async fn budget_spend(
                &self,
                client: &str,
                gcra: &$crate::gcra::Gcra,
                quantity: u64,
            ) -> Result<$crate::gcra::Decision, $crate::store::error::StoreError> {
                let bucket = $crate::ratelimit::Bucket::Client(client.to_owned());
                $crate::ratelimit::RateLimitStore::ratelimit_throttle(self, &bucket, gcra, quantity)
                    .await
            }

            async fn budget_spend_many(
                &self,
                client: &str,
                gcra: &$crate::gcra::Gcra,
                quantities: &[u64],
            ) -> Result<Vec<$crate::gcra::Decision>, $crate::store::error::StoreError> {
                let bucket = $crate::ratelimit::Bucket::Client(client.to_owned());
                $crate::ratelimit::RateLimitStore::ratelimit_throttle_many(
                    self, &bucket, gcra, quantities,
                )
                .await
            }

            async fn budget_spend_all(
                &self,
                steps: &[$step<'_>],
            ) -> Result<Vec<$crate::gcra::Decision>, $crate::store::error::StoreError> {
                let steps: Vec<_> = steps
                    .iter()
                    .map(|s| $crate::ratelimit::Throttle {
                        bucket: match s.policy {
                            None => $crate::ratelimit::Bucket::Client(s.identity.to_owned()),
                            Some(policy) => $crate::ratelimit::Bucket::Policy {
                                identity: s.identity.to_owned(),
                                policy: policy.to_owned(),
                            },
                        },
                        gcra: s.gcra,
                        quantity: s.quantity,
                        enforce: s.enforce,
                    })
                    .collect();
                $crate::ratelimit::RateLimitStore::ratelimit_throttle_all(self, &steps).await
            }
        }
    };
}
