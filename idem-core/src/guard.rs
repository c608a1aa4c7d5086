//! Settling a reservation when the caller's future is dropped or the body panics.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::{Completed, Key, OwnerToken, Store};

/// What must still happen to this caller's reservation if its future is dropped now.
pub(crate) enum Pending {
    /// Nothing: no reservation, or it is settled.
    Nothing,
    /// The reservation may exist and the body has not finished: free the key.
    Release,
    /// The body finished: store its outcome, so that a retry does not run it again.
    Complete(Completed),
}

/// Carries out the [`Pending`] action from a new task when dropped before it was settled.
/// Best effort: outside a Tokio runtime the lease runs out instead.
pub(crate) struct Settle {
    store: Arc<dyn Store>,
    key: Key,
    owner: OwnerToken,
    pub(crate) pending: Pending,
}

impl Settle {
    pub(crate) fn new(store: Arc<dyn Store>, key: Key, owner: OwnerToken) -> Self {
        Settle {
            store,
            key,
            owner,
            pending: Pending::Release,
        }
    }

    pub(crate) fn owner(&self) -> &OwnerToken {
        &self.owner
    }

    pub(crate) fn settled(&mut self) {
        self.pending = Pending::Nothing;
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        let pending = std::mem::replace(&mut self.pending, Pending::Nothing);
        if matches!(pending, Pending::Nothing) {
            return;
        }
        let (store, key, owner) = (self.store.clone(), self.key.clone(), self.owner.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(target: "idem", key = key.as_str(), "call cancelled outside a Tokio runtime; the key frees when its lease passes");
            return;
        };
        runtime.spawn(async move {
            let (what, result) = match &pending {
                Pending::Complete(completed) => {
                    ("completing", store.complete(&key, &owner, completed).await)
                }
                _ => ("releasing", store.release(&key, &owner).await),
            };
            let key = key.as_str();
            match result {
                Ok(()) => tracing::debug!(target: "idem", key, "cancelled call settled by {what}"),
                Err(error) => tracing::warn!(target: "idem", key, %error, "{what} after cancellation failed; the key frees when its lease passes"),
            }
        });
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
