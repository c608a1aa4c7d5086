//! A body's future is dropped before its key is settled, so that what it owns (a transaction
//! that rolls back when dropped) is gone before a retry can take the key; and the key is
//! settled before the panic reaches the caller, so that a retry made at once finds it so.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency, Key, OnAbort, StoreError};

use crate::support::PATIENCE;

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

/// A settling write, as the store saw it.
#[derive(Clone, Debug, PartialEq)]
struct Settled {
    operation: Operation,
    /// Whether the body's future was dropped by then.
    body_dropped: bool,
    /// Whether the call had ended (its panic on the way to the caller) by then.
    call_ended: bool,
}

/// Notes each settling write.
struct Settling {
    inner: ReferenceStore,
    body_dropped: Arc<AtomicBool>,
    call_ended: Arc<AtomicBool>,
    seen: Mutex<Vec<Settled>>,
}

#[async_trait]
impl Interceptor for Settling {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if matches!(operation, Operation::Release | Operation::Complete) {
            self.seen.lock().unwrap().push(Settled {
                operation,
                body_dropped: self.body_dropped.load(Ordering::SeqCst),
                call_ended: self.call_ended.load(Ordering::SeqCst),
            });
        }
        Ok(())
    }
}

fn settled_after_a_panic(on_abort: OnAbort) -> Vec<Settled> {
    let body_dropped = Arc::new(AtomicBool::new(false));
    let call_ended = Arc::new(AtomicBool::new(false));
    let store = Arc::new(Intercepted(Settling {
        inner: ReferenceStore::new(),
        body_dropped: body_dropped.clone(),
        call_ended: call_ended.clone(),
        seen: Mutex::new(Vec::new()),
    }));
    let idem = Idempotency::from_arc(store.clone());
    let key = idem.key("orders.charge").part("o-1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o-1").unwrap()).with_on_abort(on_abort);
    let body = PanickingBody(Owned(body_dropped));
    // The call runs on a thread of its own, so that this one can stop waiting for it even if
    // it never yields.
    let (ended, end) = mpsc::channel();
    thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = runtime.spawn(async move {
            // Dropped with the call's future, once its panic has left it.
            let _ended = Owned(call_ended);
            idem.run(call, body).await
        });
        let panicked = runtime.block_on(run).is_err_and(|error| error.is_panic());
        ended.send(panicked).unwrap();
    });
    let panicked = end
        .recv_timeout(PATIENCE)
        .expect("the call ends, the body having run");
    assert!(panicked, "the panic goes on");
    let seen = store.seen.lock().unwrap().clone();
    seen
}

/// What a settle by `operation` must look like: after the body is dropped, before the call
/// ends.
fn in_order(operation: Operation) -> Settled {
    Settled {
        operation,
        body_dropped: true,
        call_ended: false,
    }
}

#[test]
fn a_panicking_body_is_dropped_before_its_key_is_released() {
    assert_eq!(
        settled_after_a_panic(OnAbort::Release),
        [in_order(Operation::Release)]
    );
}

#[test]
fn a_panicking_body_is_dropped_before_its_abort_is_recorded() {
    assert_eq!(
        settled_after_a_panic(OnAbort::Fail),
        [in_order(Operation::Complete)]
    );
}
