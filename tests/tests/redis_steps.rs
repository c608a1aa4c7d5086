//! Steps in the record's hash: one `step:<name>` field each, kept byte-exact across a takeover
//! by the same call, and gone once another call takes the key over.

use std::time::Duration;

use idem_core::{
    Claim, Clock, Fingerprint, InProgress, OwnerToken, Reservation, Store, SystemClock, Timestamp,
};
use idem_stores::redis::client as redis;
use idem_tests::redis::target::RedisTarget;

const HOUR: Duration = Duration::from_secs(3600);

fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).unwrap();
    Claim::new(
        InProgress::new(OwnerToken::generate(), fingerprint, lease_until),
        now,
    )
}

/// The names of the hash's fields that hold steps, sorted.
async fn step_fields(target: &RedisTarget, redis_key: &str) -> Vec<Vec<u8>> {
    let mut conn = target.raw().await;
    let fields: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(redis_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut names: Vec<Vec<u8>> = fields
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with(b"step"))
        .collect();
    names.sort();
    names
}

async fn pttl(target: &RedisTarget, redis_key: &str) -> i64 {
    let mut conn = target.raw().await;
    redis::cmd("PTTL")
        .arg(redis_key)
        .query_async(&mut conn)
        .await
        .unwrap()
}

async fn steps_stay_for_the_same_call_only() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let store = target.redis_store();
    let key = idem_core::Idempotency::new(store.clone())
        .key("shop.checkout")
        .part("order-1")
        .finish()
        .unwrap();
    let redis_key = store.redis_key(&key);
    let now = SystemClock.now();

    let first = claim("checkout", now + Duration::from_secs(1), now);
    let owner = first.record().owner();
    store.reserve(&key, &first).await.unwrap();
    let value: &[u8] = b"\"ch_1\"\xff\x00 not JSON, kept as it is";
    store
        .record_step(&key, owner, "charge", b"\"draft\"", now + HOUR)
        .await
        .unwrap();
    store
        .record_step(&key, owner, "charge", value, now + Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        pttl(&target, &redis_key).await > (HOUR - Duration::from_secs(60)).as_millis() as i64,
        "an earlier step's kept_until still holds the key in Redis"
    );

    let later = now + Duration::from_secs(2);
    let retry = claim("checkout", later + Duration::from_secs(30), later);
    let record = match store.reserve(&key, &retry).await.unwrap() {
        Reservation::TookOver { record, .. } => record,
        other => panic!("the same call takes a passed lease over, got {other:?}"),
    };
    assert_eq!(
        record.steps().get("charge"),
        Some(value),
        "byte-exact, replaced"
    );
    assert_eq!(record.steps().len(), 1);
    assert_eq!(
        record.steps().kept_until(),
        now + HOUR,
        "the later of the two"
    );
    assert_eq!(
        step_fields(&target, &redis_key).await,
        [&b"step:charge"[..], b"steps_kept_until"],
        "the hash keeps the steps"
    );
    assert!(
        pttl(&target, &redis_key).await > (HOUR - Duration::from_secs(60)).as_millis() as i64,
        "the takeover's expiry still covers the steps"
    );

    let expired = now + HOUR + Duration::from_secs(1);
    let another = claim(
        "another checkout",
        expired + Duration::from_secs(30),
        expired,
    );
    let record = match store.reserve(&key, &another).await.unwrap() {
        Reservation::TookOver { record, .. } => record,
        other => panic!("expired steps free the key for another call, got {other:?}"),
    };
    assert!(record.steps().is_empty(), "{record:?}");
    assert_eq!(record.attempt(), 1);
    assert_eq!(
        step_fields(&target, &redis_key).await,
        Vec::<Vec<u8>>::new(),
        "another call's record has none of the old steps"
    );
}

idem_tests::backend_tests! {
    async steps_stay_for_the_same_call_only,
}
