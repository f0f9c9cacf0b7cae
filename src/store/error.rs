//! The one error a store call can end in: a leaf module, so a domain core can name it without
//! importing the store aggregator (this module's parent), which knows every backend.

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
