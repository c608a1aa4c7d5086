//! Expiry: the key gets a Redis expiry for clean-up, while liveness is judged by the caller's
//! clock, even when that clock is far from the server's.

use std::time::Duration;

use idem_core::{
    step,
    store::{Record, Store},
    Call, Clock, Error, Fingerprint, Idempotency, ManualClock,
};
use idem_stores::redis::client as redis;
use idem_stores::redis::LEASE_GRACE;
use idem_test_servers::redis::target::RedisTarget;
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

/// A recorded step keeps the key in Redis until the TTL after it, counted on the caller's clock:
/// a renewal of the lease does not shorten that, nor does a release that keeps the record.
async fn steps_keep_the_key_until_their_ttl() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(10 * 24 * 3600));
    let store = target.redis_store().clone();
    let idem = Idempotency::new(store.clone()).with_clock(clock.clone());
    let stepped = call(&idem, "s-1");

    let (charged_tx, charged) = oneshot::channel();
    let (fail, fail_rx) = oneshot::channel::<()>();
    let held = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(call(&idem, "s-1"), async move {
                step("charge", async { Ok::<_, Error>(1) }).await?;
                charged_tx.send(()).unwrap();
                fail_rx.await.unwrap();
                Err::<u32, _>(Error::InvalidKey("declined".into()))
            })
            .await
        }
    });
    charged.await.unwrap();
    assert_close(pttl(&target, &stepped).await, TTL, "after the step");

    let Some(Record::InProgress(record)) = store.get(stepped.key()).await.unwrap() else {
        panic!("the call's record is in progress");
    };
    store
        .renew(stepped.key(), record.owner(), clock.now() + LEASE)
        .await
        .unwrap();
    assert_close(pttl(&target, &stepped).await, TTL, "after a renewal");

    fail.send(()).unwrap();
    assert!(held.await.unwrap().is_err());
    match store.get(stepped.key()).await.unwrap() {
        Some(Record::InProgress(released)) => assert!(released.is_released(), "{released:?}"),
        other => panic!("the release keeps a record with steps, found {other:?}"),
    }
    assert_close(pttl(&target, &stepped).await, TTL, "after the release");
}

idem_tests::module_tests! {
    async keys_expire_in_redis_and_by_the_callers_clock,
    async steps_keep_the_key_until_their_ttl,
}
