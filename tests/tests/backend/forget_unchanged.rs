//! The operator's delete takes only the record it read, on Redis, PostgreSQL and DynamoDB: a
//! key whose record expired after `inspect` and was reserved again by a new call keeps the new
//! reservation (`idem forget` read, then deleted whatever was there), and the record read is
//! deleted while it stands.

use std::sync::Arc;
use std::time::Duration;

use idem_core::store::{Record, Store};
use idem_core::{Call, Error, Fingerprint, Idempotency, ManualClock};
use idem_test_servers::dynamodb::TestDynamo;
use idem_test_servers::postgres::TestPg;
use idem_test_servers::redis::target::RedisTarget;
use tokio::sync::oneshot;

async fn a_key_reserved_after_the_read_keeps_its_record(store: Arc<dyn Store>) {
    let clock = ManualClock::new();
    let idem = Idempotency::from_arc(store).with_clock(clock.clone());
    let key = idem.key("orders.create").part("o-1").finish().unwrap();
    let call = || {
        Call::new(key.clone(), Fingerprint::of("o-1").unwrap()).with_ttl(Duration::from_secs(60))
    };
    idem.run(call(), async { Ok::<_, Error>("first".to_owned()) })
        .await
        .unwrap();
    let read = idem
        .inspect(&key)
        .await
        .unwrap()
        .expect("the completed record");

    // The record expires, and a new call reserves the key and holds it.
    clock.advance(Duration::from_secs(61));
    let (started, running) = oneshot::channel();
    let (finish, finished) = oneshot::channel::<()>();
    let held = tokio::spawn({
        let (idem, call) = (idem.clone(), call());
        async move {
            idem.run(call, async move {
                let _ = started.send(());
                let _ = finished.await;
                Ok::<_, Error>("second".to_owned())
            })
            .await
        }
    });
    running.await.unwrap();

    assert!(
        !idem.forget_unchanged(&key, &read).await.unwrap(),
        "the record read is gone: nothing is deleted"
    );
    let now = idem
        .inspect(&key)
        .await
        .unwrap()
        .expect("the new reservation stands");
    assert!(matches!(now.record(), Record::InProgress(_)), "{now:?}");

    finish.send(()).unwrap();
    assert_eq!(held.await.unwrap().unwrap().value, "second");
    let completed = idem
        .inspect(&key)
        .await
        .unwrap()
        .expect("the second record");
    assert!(idem.forget_unchanged(&key, &completed).await.unwrap());
    assert!(idem.inspect(&key).await.unwrap().is_none());
}

async fn on_redis() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    a_key_reserved_after_the_read_keeps_its_record(Arc::new(target.redis_store().clone())).await;
}

async fn on_postgres() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    a_key_reserved_after_the_read_keeps_its_record(target.store.clone()).await;
}

async fn on_dynamodb() {
    let Some(target) = TestDynamo::start().await else {
        return;
    };
    a_key_reserved_after_the_read_keeps_its_record(target.store.clone()).await;
}

idem_tests::module_tests! {
    async on_redis,
    async on_postgres,
    async on_dynamodb,
}
