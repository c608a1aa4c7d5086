//! The DynamoDB store's own behaviour: the item it writes, takeover and expiry on the server's
//! side of the condition, malformed items, the item size limit, and configuration.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, TimeToLiveStatus};
use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, Store, Timestamp,
        LEASE_GRACE_MS,
    },
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, ItemTooLarge, MAX_ITEM_SIZE};
use idem_test_servers::dynamodb::{unique_table_name, TestDynamo};

const NOW: u64 = 1_800_000_000_000;

fn key(name: &str) -> Key {
    Idempotency::new(idem_stores_memory_free::Nothing)
        .key("store")
        .part(name)
        .finish()
        .unwrap()
}

/// A handle's key builder needs a store; this one is never called.
mod idem_stores_memory_free {
    use idem_core::store::*;
    use idem_core::{Key, StoreError};

    pub struct Nothing;

    #[async_trait::async_trait]
    impl Store for Nothing {
        async fn reserve(&self, _: &Key, _: &Claim) -> Result<Reservation, StoreError> {
            unreachable!()
        }
        async fn complete(&self, _: &Key, _: &OwnerToken, _: &Completed) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn release(&self, _: &Key, _: &OwnerToken) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn renew(&self, _: &Key, _: &OwnerToken, _: Timestamp) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn record_step(
            &self,
            _: &Key,
            _: &OwnerToken,
            _: &str,
            _: &[u8],
            _: Timestamp,
        ) -> Result<(), StoreError> {
            unreachable!()
        }
        async fn get(&self, _: &Key) -> Result<Option<Record>, StoreError> {
            unreachable!()
        }
        async fn delete(&self, _: &Key) -> Result<(), StoreError> {
            unreachable!()
        }
    }
}

fn fingerprint(text: &str) -> Fingerprint {
    Fingerprint::of(text).unwrap()
}

/// `millis` after the epoch.
fn at(millis: u64) -> Timestamp {
    Timestamp::from_millis(millis)
}

fn claim(text: &str, lease_until: u64, now: u64) -> Claim {
    let record = InProgress::new(OwnerToken::generate(), fingerprint(text), at(lease_until))
        .with_fencing_token(now * 1000);
    Claim::new(record, at(now))
}

fn completed(text: &str, body: &[u8], expires_at: u64) -> Completed {
    Completed::new(
        fingerprint(text),
        Outcome::Ok(body.to_vec()),
        at(expires_at),
    )
}

fn s(text: &str) -> AttributeValue {
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

async fn oversized_results_are_refused_before_any_request() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());

    // Just under the limit: stored and replayed.
    let big = "x".repeat(MAX_ITEM_SIZE - 2_000);
    let call = Call::new(
        idem.key("big").part("fits").finish().unwrap(),
        fingerprint("fits"),
    );
    let stored = idem
        .run(call.clone(), async { Ok::<_, Error>(big.clone()) })
        .await
        .unwrap();
    assert!(!stored.replayed);
    let replayed = idem
        .run(call, async { Ok::<_, Error>(String::new()) })
        .await
        .unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.value.len(), big.len());

    // Over the limit: the reserve goes out, the completion does not.
    let huge = "x".repeat(MAX_ITEM_SIZE);
    let call = Call::new(
        idem.key("big").part("huge").finish().unwrap(),
        fingerprint("huge"),
    );
    let before = db.requests.count();
    let err = idem
        .run(call, async { Ok::<_, Error>(huge) })
        .await
        .unwrap_err();
    assert_eq!(
        db.requests.operations_since(before),
        vec!["PutItem".to_owned(), "PutItem".to_owned()],
        "the reservation, then the record that the call left no outcome"
    );
    let Error::NotRecorded { cause, .. } = &err else {
        panic!("expected Error::NotRecorded, got {err:?}")
    };
    let Error::Rejected { source, .. } = &**cause else {
        panic!("expected a Rejected cause, got {cause:?}")
    };
    assert!(err.ran_without_record() && !err.is_retryable(), "{err}");
    assert_eq!(err.http_status(), 500);
    let too_large = source
        .downcast_ref::<ItemTooLarge>()
        .expect("an ItemTooLarge");
    assert!(too_large.size > MAX_ITEM_SIZE);
    assert!(source.to_string().contains("item limit"), "{source}");

    // A retry is told the call left no outcome to replay, never "in progress", and nothing
    // runs again.
    let retry = Call::new(
        idem.key("big").part("huge").finish().unwrap(),
        fingerprint("huge"),
    );
    let told = idem
        .run(retry, async { Ok::<_, Error>(String::from("ran again")) })
        .await
        .unwrap_err();
    assert!(matches!(told, Error::Aborted { .. }), "{told:?}");
    assert_eq!(
        told.problem_type(),
        idem_protocol::problem::ProblemType::NotRecorded
    );

    // At the store: nothing is sent.
    let key = key("huge-direct");
    let claim = claim("h", NOW + 30_000, NOW);
    db.store.reserve(&key, &claim).await.unwrap();
    let before = db.requests.count();
    let refused = db
        .store
        .complete(
            &key,
            claim.record().owner(),
            &completed("h", &vec![b'x'; MAX_ITEM_SIZE], NOW + 60_000),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Rejected(_))),
        "{refused:?}"
    );
    assert_eq!(
        db.requests.count(),
        before,
        "no request for an oversized item"
    );
}

async fn attribute_names_and_key_prefix_are_configurable() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let names = AttributeNames {
        key: "PK".into(),
        state: "status".into(), // a reserved word in DynamoDB expressions
        ttl: "expires".into(),
        ..AttributeNames::default()
    };
    let store = DynamoDbStore::builder(db.client.clone(), unique_table_name())
        .prefix("idem#")
        .attribute_names(names)
        .build();
    assert!(store.create_table().await.unwrap());
    assert!(
        !store.create_table().await.unwrap(),
        "a second create finds the table"
    );
    let ttl = db
        .client
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .unwrap();
    let ttl = ttl.time_to_live_description().unwrap();
    assert_eq!(ttl.attribute_name(), Some("expires"));
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));

    let idem = Idempotency::new(store.clone());
    let call = Call::new(
        idem.key("charge").part("o-1").finish().unwrap(),
        fingerprint("o-1"),
    );
    idem.run(call.clone(), async { Ok::<_, Error>(1u64) })
        .await
        .unwrap();
    assert!(
        idem.run(call.clone(), async { Ok::<_, Error>(2u64) })
            .await
            .unwrap()
            .replayed
    );

    let item = db
        .client
        .get_item()
        .table_name(store.table())
        .key("PK", s(&format!("idem#|{}", call.key())))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the item under the prefixed key");
    assert_eq!(item["status"], s("completed"));
    assert!(item.contains_key("expires"));
    assert!(!item.contains_key("ttl"));
}

async fn a_missing_table_is_refused_not_retried() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::new(db.client.clone(), "idem-no-such-table");
    let idem = Idempotency::new(store);
    let call = Call::new(
        idem.key("charge").part("o-1").finish().unwrap(),
        fingerprint("o-1"),
    );
    let err = idem
        .run(call, async { Ok::<_, Error>(1u64) })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
    assert!(!err.is_retryable());
    let mut report = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(inner) = cause {
        report.push_str(&format!(": {inner}"));
        cause = inner.source();
    }
    assert!(report.contains("does not exist"), "{report}");
    assert!(report.contains("idem-no-such-table"), "{report}");
}

async fn an_overlong_prefixed_key_is_refused_before_any_request() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("p".repeat(2_100))
        .build();
    let before = db.requests.count();
    let err = store.get(&key("long")).await.unwrap_err();
    assert!(err.to_string().contains("2048"), "{err}");
    assert_eq!(db.requests.count(), before);
}

idem_tests::module_tests! {
    async items_have_the_documented_layout,
    async reserve_tells_fresh_takeover_and_expiry_apart,
    async malformed_items_are_corrupt_not_panics,
    async oversized_results_are_refused_before_any_request,
    async attribute_names_and_key_prefix_are_configurable,
    async a_missing_table_is_refused_not_retried,
    async an_overlong_prefixed_key_is_refused_before_any_request,
}
