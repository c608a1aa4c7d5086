//! Steps in the record's string value: a name/value pair of fields each after
//! steps_kept_until, kept byte-exact across a takeover by the same call, and gone once another
//! call takes the key over.

use std::time::Duration;

use idem_core::{
    store::{Claim, InProgress, OwnerToken, Reservation, Store, Timestamp},
    Clock, Fingerprint, SystemClock,
};
use idem_stores::redis::client as redis;
use idem_test_servers::redis::target::RedisTarget;

const HOUR: Duration = Duration::from_secs(3600);

fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).unwrap();
    Claim::new(
        InProgress::new(OwnerToken::generate(), fingerprint, lease_until),
        now,
    )
}

/// The fields of a record's value (`idm1`, its state byte, then fields written `len:bytes`):
/// the state byte and each field's bytes. Panics if the value is not of that layout.
fn parse(value: &[u8]) -> (u8, Vec<Vec<u8>>) {
    assert!(
        value.len() >= 5 && value.starts_with(b"idm1"),
        "not a record: {:?}",
        String::from_utf8_lossy(value)
    );
    let mut fields = Vec::new();
    let mut rest = &value[5..];
    while !rest.is_empty() {
        let colon = rest
            .iter()
            .position(|&byte| byte == b':')
            .expect("a field length and `:`");
        let digits = &rest[..colon];
        assert!(
            (1..=9).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit),
            "a field length of 1 to 9 digits: {:?}",
            String::from_utf8_lossy(digits)
        );
        let len: usize = std::str::from_utf8(digits).unwrap().parse().unwrap();
        let end = colon + 1 + len;
        assert!(end <= rest.len(), "a field runs past the end");
        fields.push(rest[colon + 1..end].to_vec());
        rest = &rest[end..];
    }
    (value[4], fields)
}

/// The in-progress record under `redis_key`, as stored.
#[derive(Debug)]
struct Stored {
    owner: Vec<u8>,
    /// The steps_kept_until field: empty when no step is recorded.
    kept_until: Vec<u8>,
    /// The steps' names and values, sorted by name.
    steps: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Reads the record under `redis_key` with `GET`; it must be in progress.
async fn stored(target: &RedisTarget, redis_key: &str) -> Stored {
    let mut conn = target.raw().await;
    let value: Option<Vec<u8>> = redis::cmd("GET")
        .arg(redis_key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let (state, fields) = parse(&value.expect("a record under the key"));
    assert_eq!(state, b'P', "in progress");
    assert!(
        fields.len() >= 7 && fields.len() % 2 == 1,
        "7 fields, then name/value pairs: {} fields",
        fields.len()
    );
    let mut steps: Vec<(Vec<u8>, Vec<u8>)> = fields[7..]
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect();
    steps.sort();
    Stored {
        owner: fields[1].clone(),
        kept_until: fields[6].clone(),
        steps,
    }
}

/// `time` as the layout writes it: decimal milliseconds.
fn millis(time: Timestamp) -> Vec<u8> {
    time.as_millis().to_string().into_bytes()
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
    let held = stored(&target, &redis_key).await;
    assert_eq!(held.owner, owner.as_str().as_bytes());
    assert_eq!(
        held.steps,
        vec![(b"charge".to_vec(), value.to_vec())],
        "one step, replaced, byte-exact"
    );
    assert_eq!(held.kept_until, millis(now + HOUR), "the later of the two");

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
    let held = stored(&target, &redis_key).await;
    assert_eq!(
        held.owner,
        retry.record().owner().as_str().as_bytes(),
        "the retry holds the record"
    );
    assert_eq!(
        held.steps,
        vec![(b"charge".to_vec(), value.to_vec())],
        "the record keeps the steps, byte-exact"
    );
    assert_eq!(held.kept_until, millis(now + HOUR), "and their kept_until");
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
    let held = stored(&target, &redis_key).await;
    assert_eq!(
        held.owner,
        another.record().owner().as_str().as_bytes(),
        "the other call holds the record"
    );
    assert_eq!(
        held.steps,
        Vec::<(Vec<u8>, Vec<u8>)>::new(),
        "another call's record has none of the old steps"
    );
    assert_eq!(held.kept_until, b"", "nor their kept_until");
}

idem_tests::module_tests! {
    async steps_stay_for_the_same_call_only,
}
