//! A connection's requests in flight: [`Counted`], the service that tells a [`Tally`] when
//! each request reaches the app and when its answer is ready (or the request is dropped). An
//! HTTP/2 connection's idle clock reads its tally (`Streams`); an HTTP/1 connection's socket
//! learns from its tally (`Traffic`) where one answer ends and the next request's head may
//! begin; and both connections' graceful close waits for what is in flight.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What counts a connection's requests in flight.
pub(super) trait Tally {
    /// A request has reached the app.
    fn opened(&self);
    /// Its answer is ready (its head, not yet its body), or it was dropped.
    fn closed(&self);
}

/// One request counted in flight until dropped: with the request's future, so a request the
/// client resets counts as ended too.
#[derive(Debug)]
struct Open<T: Tally>(Arc<T>);

impl<T: Tally> Open<T> {
    fn new(tally: Arc<T>) -> Self {
        tally.opened();
        Self(tally)
    }
}

impl<T: Tally> Drop for Open<T> {
    fn drop(&mut self) {
        self.0.closed();
    }
}

/// A service that counts each request it answers in its connection's tally.
#[derive(Debug)]
pub(super) struct Counted<S, T> {
    pub(super) inner: S,
    pub(super) tally: Arc<T>,
}

// By hand: a derived `Clone` would ask `T: Clone`, and only the `Arc` is cloned.
impl<S: Clone, T> Clone for Counted<S, T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            tally: self.tally.clone(),
        }
    }
}

impl<S, R, T> tower::Service<R> for Counted<S, T>
where
    S: tower::Service<R>,
    T: Tally,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Answer<S::Future, T>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        Answer {
            open: Some(Open::new(self.tally.clone())),
            inner: self.inner.call(req),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request's answer, counted in flight until it is ready.
    #[derive(Debug)]
    pub(super) struct Answer<F, T: Tally> {
        #[pin]
        inner: F,
        open: Option<Open<T>>,
    }
}

impl<F: Future, T: Tally> Future for Answer<F, T> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let done = this.inner.poll(cx);
        if done.is_ready() {
            // Before hyper writes the answer: the HTTP/1 socket reads the count at that write.
            *this.open = None;
        }
        done
    }
}
