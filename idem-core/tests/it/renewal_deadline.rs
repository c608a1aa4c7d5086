//! A renewal that hangs past the lease: the body is told its lease is lost at the deadline,
//! not when (or if) the store answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::store::Timestamp;
use idem_core::{
    context, store::Store, Call, Clock, Error, Fingerprint, Idempotency, Key, StoreError,
};

/// A clock that follows tokio's (paused) time, so that leases pass as timers fire.
struct TokioClock(tokio::time::Instant);

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000) + self.0.elapsed()
    }
}

/// A store whose renewals never come back while `hang` is set, like a renewal waiting on a
/// row lock or a pool with no free connection.
#[derive(Default)]
struct HangingRenewals {
    inner: ReferenceStore,
    hang: AtomicBool,
}

#[async_trait]
impl Interceptor for HangingRenewals {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if operation == Operation::Renew && self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_renewal_stuck_past_the_lease_reports_the_loss_at_the_deadline() {
    let store = Arc::new(Intercepted(HangingRenewals::default()));
    let idem =
        Idempotency::from_arc(store.clone()).with_clock(TokioClock(tokio::time::Instant::now()));
    let lease = Duration::from_secs(30);
    let key = idem.key("orders.create").part("o1").finish().unwrap();
    let call = Call::new(key, Fingerprint::of("o1").unwrap()).with_lease(lease);
    let started = tokio::time::Instant::now();
    let told = idem
        .run(call, async {
            store.hang.store(true, Ordering::SeqCst);
            let ctx = context().expect("a body has its context");
            // The body waits for the news, as a long body racing its work against it would.
            let told = tokio::time::timeout(lease * 4, ctx.lease_lost())
                .await
                .is_ok();
            store.hang.store(false, Ordering::SeqCst);
            Ok::<_, Error>((told, started.elapsed().as_secs()))
        })
        .await;
    let (told, after) = match told {
        Ok(done) => done.value,
        // Its lease lost, the call's outcome may be refused: what the body saw is the point.
        Err(error) => panic!("{error}"),
    };
    assert!(told, "the body was never told its lease passed");
    assert!(
        after <= lease.as_secs() + 1,
        "told after {after} s, not at the lease's end ({} s)",
        lease.as_secs()
    );
}
