//! Settling a reservation when the caller's future is dropped or the body panics.

use std::any::Any;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tracing::Instrument;

use crate::steps::journal::Journal;
use crate::{
    error::StoreError,
    key::Key,
    store::{Completed, Outcome, OwnerToken, Store},
    TARGET,
};

/// What must still happen to this caller's reservation if its future is dropped now.
enum Pending {
    /// Nothing: no reservation, it is settled, or it is held until its lease passes.
    Nothing,
    /// The reservation may exist and dropping it must free the key.
    Release,
    /// Store this outcome: the body finished, or was aborted under
    /// [`OnAbort::Fail`](crate::OnAbort::Fail).
    Complete(Completed),
}

/// Carries out the pending action from a new task when dropped before it was settled.
/// Best effort: outside a Tokio runtime the lease runs out instead.
pub(crate) struct Settle {
    store: Arc<dyn Store>,
    key: Key,
    owner: OwnerToken,
    pending: Pending,
    /// The running call's steps, once the body started: a release is held back while one of
    /// them ran without a record.
    journal: Option<Arc<Journal>>,
}

impl Settle {
    /// A settle for `owner`'s call, armed to release.
    pub(crate) fn new(store: Arc<dyn Store>, key: Key, owner: OwnerToken) -> Self {
        Settle {
            store,
            key,
            owner,
            pending: Pending::Release,
            journal: None,
        }
    }

    /// Consults `journal` before releasing on a drop.
    pub(crate) fn watch(&mut self, journal: Arc<Journal>) {
        self.journal = Some(journal);
    }

    pub(crate) fn owner(&self) -> &OwnerToken {
        &self.owner
    }

    /// A drop from now on frees the key.
    pub(crate) fn arm_release(&mut self) {
        self.pending = Pending::Release;
    }

    /// A drop from now on stores `completed`.
    pub(crate) fn arm_complete(&mut self, completed: Completed) {
        self.pending = Pending::Complete(completed);
    }

    /// A drop from now on leaves the reservation as it is.
    pub(crate) fn disarm(&mut self) {
        self.pending = Pending::Nothing;
    }
}

impl Drop for Settle {
    fn drop(&mut self) {
        let pending = std::mem::replace(&mut self.pending, Pending::Nothing);
        if matches!(pending, Pending::Nothing) {
            return;
        }
        let unrecorded = self.journal.as_ref().is_some_and(|j| j.has_unrecorded());
        if matches!(pending, Pending::Release) && unrecorded {
            tracing::error!(target: TARGET, key = self.key.as_str(), "call cancelled after a step that was not recorded; the key is held until its lease passes");
            return;
        }
        let (store, key, owner) = (self.store.clone(), self.key.clone(), self.owner.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(target: TARGET, key = key.as_str(), "call cancelled outside a Tokio runtime; the key frees when its lease passes");
            return;
        };
        runtime.spawn(async move {
            let (what, result) = match &pending {
                Pending::Complete(completed) => {
                    let mut result = store.complete(&key, &owner, completed).await;
                    // An answer the store refuses for good is recorded as none kept, as the
                    // call itself would have (semantics 12: never left to be run again).
                    if matches!(result, Err(StoreError::Rejected(_)))
                        && !matches!(completed.outcome(), Outcome::Aborted)
                    {
                        let none = Completed::new(
                            *completed.fingerprint(),
                            Outcome::Aborted,
                            completed.expires_at(),
                        );
                        result = store.complete(&key, &owner, &none).await;
                    }
                    ("completing", result)
                }
                _ => ("releasing", store.release(&key, &owner).await),
            };
            let key = key.as_str();
            match result {
                Ok(()) => tracing::debug!(target: TARGET, key, "cancelled call settled by {what}"),
                Err(error) => tracing::warn!(target: TARGET, key, %error, "{what} after cancellation failed; the key frees when its lease passes"),
            }
        }.in_current_span());
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
