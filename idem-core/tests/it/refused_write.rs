//! A step write the store refuses, whose record then cannot be read back: whether the lease
//! is lost is unknown, so the call is told it is lost only once its lease has passed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    step, store::Store, Call, Error, Fingerprint, Idempotency, Key, ManualClock, StoreError,
};

use crate::support::LEASE;

/// A store that refuses every step write and cannot be read.
struct Unreadable(ReferenceStore);

#[async_trait]
impl Interceptor for Unreadable {
    fn inner(&self) -> &dyn Store {
        &self.0
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        match operation {
            Operation::RecordStep => Err(StoreError::LeaseLost),
            Operation::Get => Err(StoreError::backend("the store cannot be read")),
            _ => Ok(()),
        }
    }
}

/// Runs a body that lets `elapsed` pass on the call's clock, then tries a step; returns
/// whether the step failed and whether the call was then told its lease is lost.
async fn after_a_refused_step(elapsed: Duration) -> (bool, bool) {
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(Arc::new(Intercepted(Unreadable(ReferenceStore::new()))))
        .with_clock(clock.clone());
    let key = idem.key("orders.checkout").part("o-1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o-1").unwrap()).with_lease(LEASE);
    let seen = std::sync::Mutex::new(None);
    // What the call then returns depends on the lease; the body reports what it saw.
    let _ = idem
        .run(call, async {
            clock.advance(elapsed);
            let charged = step("charge", async { Ok::<_, Error>(1) }).await;
            let context = idem_core::context().expect("a context");
            *seen.lock().unwrap() = Some((charged.is_err(), context.is_lease_lost()));
            Ok::<_, Error>(())
        })
        .await;
    let seen = seen.lock().unwrap().take();
    seen.expect("the body ran")
}

// Paused: the unreadable record is read again, with backoff, for the rest of the lease
// (Tokio's time), which then passes at once instead of in fifteen seconds.
#[tokio::test(start_paused = true)]
async fn while_the_lease_holds_the_call_is_not_told_it_is_lost() {
    assert_eq!(
        after_a_refused_step(LEASE / 2).await,
        (true, false),
        "the step fails; the lease is not declared lost"
    );
}

#[tokio::test]
async fn once_the_lease_passed_the_call_is_told_it_is_lost() {
    let (failed, lost) = after_a_refused_step(LEASE * 2).await;
    assert!(failed && lost, "failed: {failed}, lost: {lost}");
}
