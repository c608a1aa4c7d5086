//! A body's future is dropped before its key is settled, so that what it owns (a transaction
//! that rolls back when dropped) is gone before a retry can take the key.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{Call, Error, Fingerprint, Idempotency, Key, OnAbort, Store, StoreError};

/// Sets its flag when dropped.
struct Owned(Arc<AtomicBool>);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A hand-written body that owns `Owned` and panics when polled: its fields are dropped only
/// when the future itself is.
struct PanickingBody(#[allow(dead_code)] Owned);

impl Future for PanickingBody {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        panic!("the card was declined mid-way");
    }
}

/// Notes, at each settling write, whether the body had been dropped by then.
struct Settling {
    inner: ReferenceStore,
    body_dropped: Arc<AtomicBool>,
    seen: Mutex<Vec<(Operation, bool)>>,
}

#[async_trait]
impl Interceptor for Settling {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if matches!(operation, Operation::Release | Operation::Complete) {
            let dropped = self.body_dropped.load(Ordering::SeqCst);
            self.seen.lock().unwrap().push((operation, dropped));
        }
        Ok(())
    }
}

async fn settled_after_a_panic(on_abort: OnAbort) -> Vec<(Operation, bool)> {
    let body_dropped = Arc::new(AtomicBool::new(false));
    let store = Arc::new(Intercepted(Settling {
        inner: ReferenceStore::new(),
        body_dropped: body_dropped.clone(),
        seen: Mutex::new(Vec::new()),
    }));
    let idem = Idempotency::from_arc(store.clone());
    let key = idem.key("orders.charge").part("o-1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o-1").unwrap()).with_on_abort(on_abort);
    let body = PanickingBody(Owned(body_dropped));
    let run = tokio::spawn(async move { idem.run(call, body).await });
    assert!(run.await.unwrap_err().is_panic(), "the panic goes on");
    let seen = store.seen.lock().unwrap().clone();
    seen
}

#[tokio::test]
async fn a_panicking_body_is_dropped_before_its_key_is_released() {
    assert_eq!(
        settled_after_a_panic(OnAbort::Release).await,
        [(Operation::Release, true)]
    );
}

#[tokio::test]
async fn a_panicking_body_is_dropped_before_its_abort_is_recorded() {
    assert_eq!(
        settled_after_a_panic(OnAbort::Fail).await,
        [(Operation::Complete, true)]
    );
}
