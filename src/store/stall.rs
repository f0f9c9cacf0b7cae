//! A request waits for a stalled store once. A store call that times out stands for a store
//! that stopped answering (a hung or paused server, a cut network), and every later call of
//! the same request would wait the whole store timeout again: the global limiter's charge
//! failing open and then the handler's call made a paused Redis answer after two timeouts, and
//! a group commit's batch one more per call queued behind the first. So once a call of a
//! request has timed out, its later calls are not sent: they end in [`StoreError::Timeout`] at
//! once, and the request answers its 503 about one store timeout after the stall began.
//!
//! "A request" is the future [`scope`] runs: each HTTP request (the request-timeout layer), and
//! each group commit's batch (`group.rs`), which runs in a task of its own and hands what it
//! learnt back to the requests that joined it. Outside a scope (the readiness probe, the
//! ledger's ingester) nothing is kept and every call is sent.
//!
//! Only a timeout counts: an error that comes at once (a refused connection, a down Cluster
//! master) cost no wait, and calls that answer slowly but in time never stop a request, so one
//! that makes many (a UV merge over a year) still takes as long as they do. On a Cluster a
//! timeout stops the request's calls to every master, not only to the one that timed out: the
//! error does not say which master it was, and a request's keys share one master except for the
//! limiter's bucket.
//!
//! A task-local flag rather than a deadline passed down: no store signature changes, and it
//! costs a thread-local read per call and nothing per request but the scope itself.

use std::cell::Cell;
use std::future::Future;

use tokio::task::futures::TaskLocalFuture;

use super::error::StoreError;

tokio::task_local! {
    /// Whether a store call of the current request has timed out.
    static TIMED_OUT: Cell<bool>;
}

/// The text of the error a call not sent ends in (counted as no failed Redis call).
pub(crate) const NOT_SENT: &str = "not sent: an earlier store call of this request timed out";

/// `work` as one request: the store calls made while it runs share its flag.
pub type Scoped<F> = TaskLocalFuture<Cell<bool>, F>;

/// Runs `work` as one request ([`Scoped`]).
pub fn scope<F: Future>(work: F) -> Scoped<F> {
    TIMED_OUT.scope(Cell::new(false), work)
}

/// Whether a store call of the current request has timed out: its later calls are not sent.
pub(crate) fn timed_out() -> bool {
    TIMED_OUT.try_with(Cell::get).unwrap_or(false)
}

/// Notes that a store call of the current request timed out.
pub(crate) fn note_timeout() {
    let _ = TIMED_OUT.try_with(|t| t.set(true));
}

/// [`note_timeout`] when `result` is a timeout.
pub(crate) fn note<T>(result: &Result<T, StoreError>) {
    if matches!(result, Err(StoreError::Timeout)) {
        note_timeout();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_timeout_is_kept_for_the_rest_of_its_scope_only() {
        note_timeout();
        assert!(!timed_out(), "outside a scope nothing is kept");
        scope(async {
            note::<()>(&Err(StoreError::Unavailable("refused".to_owned())));
            assert!(!timed_out(), "an error that came at once cost no wait");
            note::<()>(&Err(StoreError::Timeout));
            assert!(timed_out());
            scope(async { assert!(!timed_out(), "a scope of its own starts clear") }).await;
            assert!(timed_out());
        })
        .await;
        scope(async { assert!(!timed_out(), "the next request starts clear") }).await;
    }
}
