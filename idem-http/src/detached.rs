//! A future polled by the request's own task that, if that task gives it up before it ends
//! (the client disconnected, or a streamed response's head went out first), finishes in a task
//! of its own: the handler is never cut off halfway, and a request answered at once (a replay,
//! a conflict) costs no task.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The panic a [`Detached`] future ended with.
pub(crate) type Panicked = Box<dyn Any + Send + 'static>;

/// `F`, boxed so that it can change tasks without moving.
pub(crate) struct Detached<F: Future<Output: Send + 'static> + Send + 'static>(Option<Pin<Box<F>>>);

impl<F> Detached<F>
where
    F: Future<Output: Send + 'static> + Send + 'static,
{
    pub(crate) fn new(future: F) -> Self {
        Detached(Some(Box::pin(future)))
    }
}

impl<F> Future for Detached<F>
where
    F: Future<Output: Send + 'static> + Send + 'static,
{
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.0.as_mut() else {
            panic!("a Detached future polled after it ended");
        };
        // A panic is the request's answer (as a task's would be), not the connection's end.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.0 = None;
                Poll::Ready(Ok(output))
            }
            Err(panic) => {
                // Dropped, not finished elsewhere: what panicked has already settled its key.
                self.0 = None;
                Poll::Ready(Err(panic))
            }
        }
    }
}

impl<F> Drop for Detached<F>
where
    F: Future<Output: Send + 'static> + Send + 'static,
{
    fn drop(&mut self) {
        let Some(future) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(future);
            }
            // No runtime left to finish it on (it is shutting down): it is dropped, an abort
            // the engine settles as the call's `OnAbort` says.
            Err(_) => drop(future),
        }
    }
}

/// The message of a caught panic, when it has one.
pub(crate) fn message(panic: &Panicked) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}
