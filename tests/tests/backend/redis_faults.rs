//! Fault tests against a Redis server the test owns: killed mid-call, restarted under a live
//! store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Call, Error, Fingerprint, Idempotency, ManualClock};
use idem_stores::redis::RequestFailed;
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::interrupt::interrupted_mid_body;

// Short: a completion against a dead server is retried for as long as the lease, in real
// time too.
const LEASE: Duration = Duration::from_secs(3);

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap()).with_lease(LEASE)
}

/// Runs the call with a body that counts its runs.
async fn create(idem: &Idempotency, order: &str, runs: &AtomicUsize) -> Result<bool, Error> {
    idem.run(call(idem, order), async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, Error>(format!("created {order}"))
    })
    .await
    .map(|done| done.replayed)
}

async fn server_killed_between_reserve_and_complete() {
    // Every write reaches the disk before its reply, so the reservation survives the kill.
    let Some(redis) = TestRedis::start_persistent() else {
        return;
    };
    let mut target = RedisTarget::on(redis).await;
    let clock = ManualClock::new();
    let idem = Idempotency::new(target.redis_store().clone()).with_clock(clock.clone());
    let runs = Arc::new(AtomicUsize::new(0));

    // The first call reserves the key, and the server dies while its body runs.
    let err = interrupted_mid_body(&idem, call(&idem, "o-1"), &runs, || target.server().kill())
        .await
        .unwrap_err();

    // Its outcome cannot be stored: the caller is told so, and not invited to retry.
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Store { .. })),
        "{err:?}"
    );
    assert!(err.ran_without_record() && !err.is_retryable(), "{err:?}");
    assert_eq!(err.http_status(), 500);
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // While the server is down, calls fail closed without running the body.
    let err = create(&idem, "o-1", &runs).await.unwrap_err();
    let Error::Store { key, source } = &err else {
        panic!("expected Error::Store, got {err:?}")
    };
    assert!(key.ends_with("o-1"), "{key}");
    let failed = source
        .downcast_ref::<RequestFailed>()
        .expect("the redis crate's error, typed");
    assert_eq!(failed.operation(), "reserve");
    let redis_error = failed.redis_error();
    assert!(
        redis_error.is_io_error()
            || redis_error.is_connection_dropped()
            || redis_error.is_timeout(),
        "{redis_error:?}"
    );
    let err = create(&idem, "o-2", &runs).await.unwrap_err();
    assert!(matches!(err, Error::Store { .. }), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Back up, with the reservation: the lease still holds, so the body does not run again.
    target.server().restart();
    let err = create(&idem, "o-1", &runs).await.unwrap_err();
    assert!(matches!(err, Error::InProgress { .. }), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Once the lease has passed the key works again: the first outcome was never stored, so a
    // retry takes the reservation over and runs the body; later retries replay it.
    clock.advance(LEASE + Duration::from_millis(1));
    assert!(!create(&idem, "o-1", &runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(create(&idem, "o-1", &runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Keys untouched by the outage were never consumed.
    assert!(!create(&idem, "o-2", &runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

async fn store_reconnects_after_a_restart() {
    let Some(redis) = TestRedis::start_owned() else {
        return;
    };
    let mut target = RedisTarget::on(redis).await;
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone());
    let runs = AtomicUsize::new(0);
    assert!(!create(&idem, "before", &runs).await.unwrap());

    target.server().kill();
    let err = create(&idem, "during", &runs).await.unwrap_err();
    assert!(matches!(err, Error::Store { .. }), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // A fresh server (no data kept) on the same port; the same store finds it.
    target.server().restart();
    assert!(!create(&idem, "after", &runs).await.unwrap());
    assert!(create(&idem, "after", &runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Twice more, to show it is not a one-off.
    for round in 0..2 {
        target.server().kill();
        target.server().restart();
        let order = format!("round-{round}");
        assert!(!create(&idem, &order, &runs).await.unwrap());
        assert!(create(&idem, &order, &runs).await.unwrap());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

idem_tests::module_tests! {
    async server_killed_between_reserve_and_complete,
    async store_reconnects_after_a_restart,
}
