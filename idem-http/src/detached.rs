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

/// `F`, boxed so that it can change tasks without moving, and the runtime it finishes on if
/// its task gives it up.
pub(crate) struct Detached<F: Future<Output: Send + 'static> + Send + 'static> {
    future: Option<Pin<Box<F>>>,
    runtime: Option<tokio::runtime::Handle>,
}

impl<F> Detached<F>
where
    F: Future<Output: Send + 'static> + Send + 'static,
{
    /// `future`, to finish on the runtime this is called on (the one serving the request,
    /// whose I/O the future may hold) whatever thread drops it.
    pub(crate) fn new(future: F) -> Self {
        Detached {
            future: Some(Box::pin(future)),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }
}

impl<F> Future for Detached<F>
where
    F: Future<Output: Send + 'static> + Send + 'static,
{
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.future.as_mut() else {
            panic!("a Detached future polled after it ended");
        };
        // A panic is the request's answer (as a task's would be), not the connection's end.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.future = None;
                Poll::Ready(Ok(output))
            }
            Err(panic) => {
                // Dropped, not finished elsewhere: what panicked has already settled its key.
                self.future = None;
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
        let Some(future) = self.future.take() else {
            return;
        };
        match &self.runtime {
            // On a runtime that is shutting down, the task is dropped at once, as a spawned
            // call's was: an abort the engine settles as the call's `OnAbort` says.
            Some(runtime) => drop(runtime.spawn(future)),
            // Created outside any runtime, so polled by a caller that drives it by hand: there
            // is nowhere to finish it, and dropping it is that same abort.
            None => drop(future),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_future_given_up_on_another_thread_finishes_on_the_runtime_it_was_made_on() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let (go, gone) = tokio::sync::oneshot::channel::<()>();
        let (finished, done) = std::sync::mpsc::channel();
        let call = async move {
            let _ = gone.await;
            finished.send(()).unwrap();
        };
        let detached = {
            let _inside = runtime.enter();
            Detached::new(call)
        };
        std::thread::spawn(move || drop(detached)).join().unwrap();
        go.send(()).unwrap();
        done.recv_timeout(Duration::from_secs(30))
            .expect("the future finishes in a task of its own");
    }

    async fn panics(message: &'static str) {
        panic!("{message}");
    }

    #[tokio::test]
    async fn a_panic_is_the_futures_output_with_its_message() {
        let Err(panicked) = Detached::new(panics("halfway")).await else {
            panic!("the future panicked");
        };
        assert_eq!(message(&panicked), "halfway");
    }
}
