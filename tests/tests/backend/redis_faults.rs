//! Fault tests against a Redis server the test owns: killed mid-call, restarted under a live
//! store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use idem_core::{Error, Idempotency, ManualClock};
use idem_stores::redis::RequestFailed;
use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::interrupt::{back_up_with_the_reservation, create, killed_mid_body};

async fn server_killed_between_reserve_and_complete() {
    // Every write reaches the disk before its reply, so the reservation survives the kill.
    let Some(redis) = TestRedis::start_persistent() else {
        return;
    };
    let mut target = RedisTarget::on(redis).await;
    let clock = ManualClock::new();
    let idem = Idempotency::new(target.redis_store().clone()).with_clock(clock.clone());
    let runs = Arc::new(AtomicUsize::new(0));

    killed_mid_body(&idem, &runs, || target.server().kill()).await;

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

    target.server().restart();
    back_up_with_the_reservation(&idem, &clock, &runs).await;
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
