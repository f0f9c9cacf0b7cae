//! Waiting for a real party — a server starting, a process ending, a replica syncing, the
//! gateway's own timers — by looking again until a deadline: the test goes on as soon as the
//! condition holds, and a loaded machine makes it wait longer, up to the deadline, rather than
//! fail. These are the suite's only pauses between looks.

use std::future::Future;
use std::time::{Duration, Instant};

/// Between two looks: short against what is waited for, long enough not to busy the cores
/// that the awaited party needs.
const EVERY: Duration = Duration::from_millis(20);

/// Looks at `done` until it holds or `within` has passed; whether it held.
pub fn until_blocking(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // real time: another process acts meanwhile.
        std::thread::sleep(EVERY);
    }
}

/// Looks at `look` until it gives a value or `within` has passed.
pub async fn until<T, F>(within: Duration, look: impl FnMut() -> F) -> Option<T>
where
    F: Future<Output = Option<T>>,
{
    until_every(within, EVERY, look).await
}

/// [`until`], looking every `every`: for a look that is itself an act on the awaited party
/// (a retried write, a failover asked for again), paced as that party can take it.
pub async fn until_every<T, F>(
    within: Duration,
    every: Duration,
    mut look: impl FnMut() -> F,
) -> Option<T>
where
    F: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = look().await {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        // Real time: another process, or the gateway's own timers, act meanwhile.
        tokio::time::sleep(every).await;
    }
}

/// [`until`], failing the test with `what` when `within` passes first.
pub async fn eventually<T, F>(within: Duration, what: &str, look: impl FnMut() -> F) -> T
where
    F: Future<Output = Option<T>>,
{
    match until(within, look).await {
        Some(v) => v,
        None => panic!("not within {within:?}: {what}"),
    }
}

/// [`eventually`] for a condition read without waiting (a task finished, a count reached).
pub async fn eventually_holds(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    eventually(within, what, || {
        let held = done();
        async move { held.then_some(()) }
    })
    .await;
}
