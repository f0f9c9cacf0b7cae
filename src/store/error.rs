//! The one error a store call can end in: a leaf module, so a domain core can name it without
//! importing the store aggregator (this module's parent), which knows every backend.

/// Why a store call failed. Only this crosses the store boundary; backend errors stay below.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached (connection reset, cluster down), for no reason the client
    /// can name.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store cannot be reached, for a reason that needs someone to act on it.
    #[error("store unreachable: {}", .0.reason())]
    Unreachable(Unreachable),
    /// The store did not answer within the configured timeout.
    #[error("store timed out")]
    Timeout,
    /// A lasting write was made, but the replicas `GATEWAY_WRITE_REPLICAS` asks for did not
    /// confirm they hold it in time: it may or may not survive a failover.
    #[error("the write's replicas did not confirm it in time")]
    Unreplicated,
    /// The server has no such command (named here): the data asks for a module the server
    /// does not have loaded, such as a Bloom filter made while the server had one. Not a bug
    /// of the gateway and not an outage: it answers again once the server has the module.
    #[error("the server has no {0} command")]
    Unsupported(String),
    /// The store answered something the gateway did not expect: a bug.
    #[error("store error: {0}")]
    Internal(String),
}

/// Why connecting to the store fails, when that can be told: each asks for a different fix
/// (start Redis or fix the port, fix the password, the database number, the scheme or the
/// certificate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    /// Nothing listens at the address.
    ConnectionRefused,
    /// The server wants a password and got none, or refused the one given.
    AuthenticationFailed,
    /// The URL's database number does not exist on the server.
    UnknownDatabase,
    /// The TLS handshake failed: a plain server behind `rediss://`, or a certificate refused.
    TlsFailed,
}

impl Unreachable {
    /// The stable snake_case code (`/readyz`'s `reason`, docs/operations.md).
    pub fn reason(self) -> &'static str {
        match self {
            Self::ConnectionRefused => "connection_refused",
            Self::AuthenticationFailed => "authentication_failed",
            Self::UnknownDatabase => "unknown_database",
            Self::TlsFailed => "tls_failed",
        }
    }

    /// What to do about it, for the start-up log line.
    pub fn hint(self) -> &'static str {
        match self {
            Self::ConnectionRefused => {
                "nothing listens at REDIS_URL's host and port: start Redis or fix the address"
            }
            Self::AuthenticationFailed => {
                "Redis refused the credentials: put the password (and user) in REDIS_URL, \
                 redis://user:password@host:port"
            }
            Self::UnknownDatabase => {
                "the server has no such database: fix the number after the port in REDIS_URL \
                 (0 to 15 by default)"
            }
            Self::TlsFailed => {
                "the TLS handshake failed: use redis:// for a server without TLS, or check its \
                 certificate"
            }
        }
    }
}

impl StoreError {
    /// The stable snake_case code of why the store cannot answer (`/readyz`'s `reason`).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "unavailable",
            Self::Unreachable(why) => why.reason(),
            Self::Timeout => "timeout",
            Self::Unreplicated => "unreplicated",
            Self::Unsupported(_) => "missing_module",
            Self::Internal(_) => "internal",
        }
    }
}
