//! Releasing a reservation when the body panics or its future is dropped.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::{Key, OwnerToken, Store};

/// Releases the reservation from a new task if dropped while armed: the caller's future was
/// dropped mid-flight. Best effort: outside a Tokio runtime the lease runs out instead.
pub(crate) struct ReleaseOnDrop {
    armed: Option<(Arc<dyn Store>, Key, OwnerToken)>,
}

impl ReleaseOnDrop {
    pub(crate) fn new(store: Arc<dyn Store>, key: Key, owner: OwnerToken) -> Self {
        ReleaseOnDrop {
            armed: Some((store, key, owner)),
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.armed = None;
    }
}

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        let Some((store, key, owner)) = self.armed.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    match store.release(&key, &owner).await {
                        Ok(()) => tracing::debug!(target: "idem", key = key.as_str(), "released: call cancelled"),
                        Err(error) => tracing::warn!(target: "idem", key = key.as_str(), %error, "release after cancellation failed; the key frees when its lease passes"),
                    }
                });
            }
            Err(_) => tracing::warn!(
                target: "idem",
                key = key.as_str(),
                "call cancelled outside a Tokio runtime; the key frees when its lease passes"
            ),
        }
    }
}

/// Polls a pinned future, turning a panic into an `Err` with the panic's payload.
pub(crate) struct CatchUnwind<F>(pub(crate) F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}
