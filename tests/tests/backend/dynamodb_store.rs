//! The DynamoDB store's own behaviour: the item it writes, takeover and expiry on the server's
//! side of the condition, and malformed items; the helpers that write its items by hand,
//! which `dynamodb_store_limits` shares.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp,
        LEASE_GRACE_MS,
    },
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};
use idem_test_servers::dynamodb::TestDynamo;
use idem_tests::inventory;

/// The time the tests write at.
pub(super) const NOW: u64 = 1_800_000_000_000;

/// The key of the function `store` with the one part `name`, in the default namespace.
pub(super) fn key(name: &str) -> Key {
    inventory::key("store", &[name])
}

pub(super) fn fingerprint(text: &str) -> Fingerprint {
    Fingerprint::of(text).unwrap()
}

/// `millis` after the epoch.
pub(super) fn at(millis: u64) -> Timestamp {
    Timestamp::from_millis(millis)
}

pub(super) fn claim(text: &str, lease_until: u64, now: u64) -> Claim {
    let record = InProgress::new(OwnerToken::generate(), fingerprint(text), at(lease_until))
        .with_fencing_token(now * 1000);
    Claim::new(record, at(now))
}

pub(super) fn completed(text: &str, body: &[u8], expires_at: u64) -> Completed {
    Completed::new(
        fingerprint(text),
        Outcome::ok(body.to_vec()),
        at(expires_at),
    )
}

pub(super) fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.into())
}

fn n(number: u64) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

async fn items_have_the_documented_layout() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let key = key("layout");
    let claim = claim("a", NOW + 30_001, NOW);
    db.store.reserve(&key, &claim).await.unwrap();
    let item = db.get_raw(&key).await.unwrap();
    let expected = HashMap::from([
        ("pk".to_owned(), s(&format!("|{key}"))),
        ("state".to_owned(), s("in_progress")),
        ("owner".to_owned(), s(claim.record().owner().as_str())),
        ("fingerprint".to_owned(), s(&fingerprint("a").to_hex())),
        ("live_until_ms".to_owned(), n(NOW + 30_001)),
        ("fencing_token".to_owned(), n(NOW * 1000)),
        ("attempt".to_owned(), n(1)),
        (
            "ttl".to_owned(),
            n((NOW + 30_001 + LEASE_GRACE_MS).div_ceil(1000)),
        ),
        ("steps".to_owned(), AttributeValue::M(HashMap::new())),
    ]);
    assert_eq!(item, expected);

    db.store
        .renew(&key, claim.record().owner(), at(NOW + 61_500))
        .await
        .unwrap();
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["live_until_ms"], n(NOW + 61_500));
    assert_eq!(
        item["ttl"],
        n((NOW + 61_500 + LEASE_GRACE_MS).div_ceil(1000))
    );

    let done = completed("a", b"{\"receipt\":1}", NOW + 86_400_000);
    db.store
        .complete(&key, claim.record().owner(), &done)
        .await
        .unwrap();
    let item = db.get_raw(&key).await.unwrap();
    let expected = HashMap::from([
        ("pk".to_owned(), s(&format!("|{key}"))),
        ("state".to_owned(), s("completed")),
        ("owner".to_owned(), s(claim.record().owner().as_str())),
        ("fingerprint".to_owned(), s(&fingerprint("a").to_hex())),
        ("live_until_ms".to_owned(), n(NOW + 86_400_000)),
        ("ttl".to_owned(), n((NOW + 86_400_000) / 1000)),
        ("outcome".to_owned(), s("ok")),
        ("body".to_owned(), s("{\"receipt\":1}")),
    ]);
    assert_eq!(item, expected);
    assert_eq!(
        db.store.get(&key).await.unwrap(),
        Some(Record::Completed(done))
    );
}

async fn reserve_tells_fresh_takeover_and_expiry_apart() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &db.store;
    let key = key("takeover");

    let first = claim("a", NOW + 1_000, NOW);
    assert_eq!(
        store.reserve(&key, &first).await.unwrap(),
        Reservation::Reserved(first.record().clone())
    );
    // The lease is live at its last millisecond and passed at its deadline.
    let early = claim("a", NOW + 5_000, NOW + 999);
    assert_eq!(
        store.reserve(&key, &early).await.unwrap(),
        Reservation::Existing(Record::InProgress(first.record().clone()))
    );
    let other = claim("b", NOW + 5_000, NOW + 2_000);
    assert_eq!(
        store.reserve(&key, &other).await.unwrap(),
        Reservation::Existing(Record::InProgress(first.record().clone())),
        "a lease-passed record is taken over only with the same fingerprint"
    );
    let second = claim("a", NOW + 5_000, NOW + 1_000);
    let before = db.requests.count();
    let taken = second.record().taking_over(first.record());
    assert_eq!(
        store.reserve(&key, &second).await.unwrap(),
        Reservation::TookOver {
            previous: first.record().owner().clone(),
            record: taken.clone(),
        }
    );
    assert_eq!(
        db.requests.operations_since(before),
        vec!["PutItem".to_owned(), "UpdateItem".to_owned()],
        "a takeover by the same call is a put on a free key, then an update conditioned on \
         the record it found"
    );
    assert_eq!(taken.attempt(), 2);
    assert!(taken.fencing_token() > first.record().fencing_token());
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::InProgress(taken))
    );

    let done = completed("a", b"1", NOW + 10_000);
    store
        .complete(&key, second.record().owner(), &done)
        .await
        .unwrap();
    let live = claim("b", NOW + 20_000, NOW + 9_999);
    assert_eq!(
        store.reserve(&key, &live).await.unwrap(),
        Reservation::Existing(Record::Completed(done))
    );
    let after_expiry = claim("b", NOW + 20_000, NOW + 10_000);
    assert_eq!(
        store.reserve(&key, &after_expiry).await.unwrap(),
        Reservation::Reserved(after_expiry.record().clone()),
        "an expired completed record is replaced, not taken over"
    );
}

async fn malformed_items_are_corrupt_not_panics() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let good = HashMap::from([
        ("state".to_owned(), s("completed")),
        ("fingerprint".to_owned(), s(&fingerprint("a").to_hex())),
        ("live_until_ms".to_owned(), n(NOW + 60_000)),
        ("ttl".to_owned(), n(NOW / 1000 + 60)),
        ("outcome".to_owned(), s("ok")),
        (
            "body".to_owned(),
            AttributeValue::B(Blob::new(b"1".to_vec())),
        ),
    ]);
    let cases: Vec<(&str, &str, Option<AttributeValue>)> = vec![
        ("no-state", "state", None),
        ("bad-state", "state", Some(s("finished"))),
        ("no-fingerprint", "fingerprint", None),
        ("short-fingerprint", "fingerprint", Some(s("abc"))),
        ("number-fingerprint", "fingerprint", Some(n(7))),
        ("string-expiry", "live_until_ms", Some(s("tomorrow"))),
        (
            "fraction-expiry",
            "live_until_ms",
            Some(AttributeValue::N("2000000000000.5".into())),
        ),
        ("no-body", "body", None),
        ("number-body", "body", Some(n(1))),
        (
            "binary-state",
            "state",
            Some(AttributeValue::B(Blob::new(b"completed".to_vec()))),
        ),
        ("bad-outcome", "outcome", Some(s("maybe"))),
        ("in-progress-without-owner", "state", Some(s("in_progress"))),
    ];
    for (name, attribute, value) in cases {
        let key = key(name);
        let mut item = good.clone();
        match value {
            Some(value) => item.insert(attribute.to_owned(), value),
            None => item.remove(attribute),
        };
        db.put_raw(&key, item).await;
        let got = db.store.get(&key).await;
        assert!(
            matches!(got, Err(StoreError::Corrupt(_))),
            "{name}: get gave {got:?}"
        );
        let reserved = db.store.reserve(&key, &claim("a", NOW + 1_000, NOW)).await;
        assert!(
            matches!(reserved, Err(StoreError::Corrupt(_))),
            "{name}: reserve gave {reserved:?}"
        );
        let owner = OwnerToken::generate();
        let released = db.store.release(&key, &owner).await;
        assert!(
            matches!(released, Err(StoreError::LeaseLost)),
            "{name}: release gave {released:?}"
        );
    }

    let idem = Idempotency::from_arc(db.store.clone());
    let key = idem.key("charge").part("corrupt").finish().unwrap();
    db.put_raw(&key, HashMap::from([("state".to_owned(), n(1))]))
        .await;
    let err = idem
        .run(Call::new(key, fingerprint("a")), async {
            Ok::<_, Error>(1u64)
        })
        .await
        .unwrap_err();
    match err {
        Error::CorruptRecord { reason, .. } => assert!(reason.contains("attribute"), "{reason}"),
        other => panic!("expected CorruptRecord, got {other:?}"),
    }
}

idem_tests::module_tests! {
    async items_have_the_documented_layout,
    async reserve_tells_fresh_takeover_and_expiry_apart,
    async malformed_items_are_corrupt_not_panics,
}
