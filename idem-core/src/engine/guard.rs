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
pub(crate) struct Settle<'call> {
    store: Arc<dyn Store>,
    /// Cloned only when a drop leaves something to do.
    key: &'call Key,
    owner: OwnerToken,
    pending: Pending,
    /// The running call's steps, once the body started: a release is held back while one of
    /// them ran without a record.
    journal: Option<Arc<Journal>>,
    /// An outcome was armed: the call has its answer, which only a store may now end.
    answered: bool,
}

impl<'call> Settle<'call> {
    /// A settle for `owner`'s call, armed to release.
    pub(crate) fn new(store: Arc<dyn Store>, key: &'call Key, owner: OwnerToken) -> Self {
        Settle {
            store,
            key,
            owner,
            pending: Pending::Release,
            journal: None,
            answered: false,
        }
    }

    /// Consults `journal` before releasing on a drop.
    pub(crate) fn watch(&mut self, journal: Arc<Journal>) {
        self.journal = Some(journal);
    }

    pub(crate) fn owner(&self) -> &OwnerToken {
        &self.owner
    }

    /// The store this call runs against: timed, or not when nothing listens.
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// A drop from now on frees the key.
    pub(crate) fn arm_release(&mut self) {
        // Semantics 12 and 13: once a call has its answer, or a step of it ran without a
        // record, nothing releases its key, or a retry would run the side effect again.
        debug_assert!(
            !self.answered,
            "a call with an answer to keep is never armed to release"
        );
        debug_assert!(
            !self.journal.as_ref().is_some_and(|j| j.has_unrecorded()),
            "a call after an unrecorded step is never armed to release"
        );
        self.pending = Pending::Release;
    }

    /// A drop from now on stores `completed`.
    pub(crate) fn arm_complete(&mut self, completed: Completed) {
        self.answered = true;
        self.pending = Pending::Complete(completed);
    }

    /// A drop from now on leaves the reservation as it is.
    pub(crate) fn disarm(&mut self) {
        self.pending = Pending::Nothing;
    }
}

impl Drop for Settle<'_> {
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

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use crate::fingerprint::Fingerprint;
    use crate::store::{Claim, Record, Reservation, Timestamp};

    /// A store no test here reaches: a disarmed guard sends nothing.
    struct Unreached;

    #[async_trait::async_trait]
    impl Store for Unreached {
        async fn reserve(&self, _: &Key, _: &Claim) -> Result<Reservation, StoreError> {
            unreachable!()
        }
        async fn complete(&self, _: &Key, _: &OwnerToken, _: &Completed) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn release(&self, _: &Key, _: &OwnerToken) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn renew(&self, _: &Key, _: &OwnerToken, _: Timestamp) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn record_step(
            &self,
            _: &Key,
            _: &OwnerToken,
            _: &str,
            _: &[u8],
            _: Timestamp,
        ) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn get(&self, _: &Key) -> Result<Option<Record>, StoreError> {
            unreachable!()
        }
        async fn delete(&self, _: &Key) -> Result<(), StoreError> {
            unreachable!()
        }
    }

    fn settle() -> Settle<'static> {
        let store: Arc<dyn Store> = Arc::new(Unreached);
        let key = Box::leak(Box::new(Key::parse("idem|f|k").expect("a key")));
        Settle::new(store, key, OwnerToken::generate())
    }

    #[test]
    #[should_panic(expected = "never armed to release")]
    fn a_call_with_an_answer_is_never_armed_to_release() {
        let mut settle = settle();
        let completed = Completed::new(
            Fingerprint::from_bytes([0; 32]),
            Outcome::ok(b"1".to_vec()),
            Timestamp::from_millis(1),
        );
        settle.arm_complete(completed);
        settle.disarm();
        settle.arm_release();
    }

    #[test]
    fn a_call_without_an_answer_may_be_armed_to_release() {
        let mut settle = settle();
        settle.disarm();
        settle.arm_release();
        settle.disarm();
    }
}
