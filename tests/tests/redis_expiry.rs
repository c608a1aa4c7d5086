//! Expiry: the key gets a Redis expiry for clean-up, while liveness is judged by the caller's
//! clock, even when that clock is far from the server's.

use std::time::Duration;

use idem_core::{Call, Error, Fingerprint, Idempotency, ManualClock};
use idem_stores::redis::client as redis;
use idem_stores::redis::LEASE_GRACE;
use idem_tests::redis_target::RedisTarget;
use tokio::sync::oneshot;

const TTL: Duration = Duration::from_secs(3600);
const LEASE: Duration = Duration::from_secs(30);

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap())
        .with_ttl(TTL)
        .with_lease(LEASE)
}

async fn pttl(target: &RedisTarget, call: &Call) -> i64 {
    let mut conn = target.raw().await;
    redis::cmd("PTTL")
        .arg(target.redis_store().redis_key(call.key()))
        .query_async(&mut conn)
        .await
        .unwrap()
}

fn assert_close(pttl: i64, expected: Duration, what: &str) {
    let expected = expected.as_millis() as i64;
    assert!(
        pttl <= expected && pttl > expected - 5_000,
        "{what}: PTTL {pttl} ms, expected about {expected} ms"
    );
}

async fn keys_expire_in_redis_and_by_the_callers_clock() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    // The caller's clock runs ten days ahead of the server's.
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(10 * 24 * 3600));
    let idem = Idempotency::new(target.redis_store().clone()).with_clock(clock.clone());

    // In progress: the key lives for the lease plus the grace.
    let (started_tx, started) = oneshot::channel();
    let (finish, finish_rx) = oneshot::channel::<()>();
    let held = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(call(&idem, "o-1"), async move {
                started_tx.send(()).unwrap();
                finish_rx.await.unwrap();
                Ok::<_, Error>(1)
            })
            .await
        }
    });
    started.await.unwrap();
    assert_close(
        pttl(&target, &call(&idem, "o-1")).await,
        LEASE + LEASE_GRACE,
        "in progress",
    );
    finish.send(()).unwrap();
    held.await.unwrap().unwrap();

    // Completed: the key lives for the TTL, counted on the caller's clock.
    assert_close(pttl(&target, &call(&idem, "o-1")).await, TTL, "completed");
    let replay = idem
        .run(call(&idem, "o-1"), async { Ok::<_, Error>(2) })
        .await
        .unwrap();
    assert!(replay.replayed);

    // Past the TTL on the caller's clock the key is new, though Redis still holds it.
    clock.advance(TTL);
    assert!(pttl(&target, &call(&idem, "o-1")).await > 0);
    let again = idem
        .run(call(&idem, "o-1"), async { Ok::<_, Error>(3) })
        .await
        .unwrap();
    assert!(!again.replayed);
    assert_eq!(again.value, 3);
}

idem_tests::backend_tests! {
    async keys_expire_in_redis_and_by_the_callers_clock,
}
