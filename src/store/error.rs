//! The store's one error type, in a leaf module of its own: domains name it in their store
//! traits without depending on the aggregator (`store/mod.rs`) that knows every backend.

/// Why a store call failed. Only this crosses the store boundary; backend errors stay below.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached (connection refused, reset, cluster down).
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store did not answer within the configured timeout.
    #[error("store timed out")]
    Timeout,
    /// The store answered something the gateway did not expect: a bug.
    #[error("store error: {0}")]
    Internal(String),
}
