//! The DynamoDB store's steps: the attributes they take, the sweeper's `ttl` kept at or after
//! them through steps, renewals and releases, takeovers that keep or drop them, the item size
//! limit, and a waiting duplicate woken by a release that keeps them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::{
    step,
    store::{
        Claim, InProgress, OwnerToken, Record, Reservation, Steps, Store, Timestamp, LEASE_GRACE_MS,
    },
    Call, Error, Fingerprint, Idempotency, Key, StoreError,
};
use idem_stores::dynamodb::{AttributeNames, DynamoDbStore, StepTooLarge, MAX_ITEM_SIZE};
use idem_test_servers::dynamodb::{unique_table_name, TestDynamo};

const NOW: u64 = 1_800_000_000_000;
const HOUR: u64 = 3_600_000;

fn key(db: &TestDynamo, name: &str) -> Key {
    Idempotency::from_arc(db.store.clone())
        .key("steps")
        .part(name)
        .finish()
        .unwrap()
}

fn at(millis: u64) -> Timestamp {
    Timestamp::from_millis(millis)
}

fn claim(text: &str, lease_until: u64, now: u64) -> Claim {
    let record = InProgress::new(
        OwnerToken::generate(),
        Fingerprint::of(text).unwrap(),
        at(lease_until),
    )
    .with_fencing_token(now * 1000);
    Claim::new(record, at(now))
}

/// Reserves `name`'s key for a call on `"a"`, leased 30 s from `NOW`; returns the key and the
/// owner.
async fn reserved(db: &TestDynamo, name: &str) -> (Key, OwnerToken) {
    reserved_until(db, name, NOW + 30_000).await
}

/// Reserves `name`'s key for a call on `"a"` at `NOW`, leased until `lease_until`; returns the
/// key and the owner.
async fn reserved_until(db: &TestDynamo, name: &str, lease_until: u64) -> (Key, OwnerToken) {
    let key = key(db, name);
    let claim = claim("a", lease_until, NOW);
    db.store.reserve(&key, &claim).await.unwrap();
    (key, claim.record().owner().clone())
}

/// The same call on `"a"` takes `key` over at `NOW` + 1 s, once a lease of a second has passed,
/// for 30 s more; returns the record it took over with.
async fn taken_over_by_the_same_call(db: &TestDynamo, key: &Key) -> InProgress {
    let second = claim("a", NOW + 31_000, NOW + 1_000);
    let Reservation::TookOver { record, .. } = db.store.reserve(key, &second).await.unwrap()
    else {
        panic!("the same call takes a passed lease over")
    };
    record
}

fn n(number: u64) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

fn b(bytes: &[u8]) -> AttributeValue {
    AttributeValue::B(Blob::new(bytes.to_vec()))
}

/// The sweeper's `ttl` for an instant in milliseconds: whole seconds, rounded up.
fn seconds(millis: u64) -> AttributeValue {
    n(millis.div_ceil(1000))
}

fn steps_of(record: Option<Record>) -> Steps {
    match record {
        Some(Record::InProgress(held)) => held.steps().clone(),
        other => panic!("expected an in-progress record, found {other:?}"),
    }
}

async fn steps_are_stored_byte_for_byte_with_their_expiry() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved(&db, "layout").await;
    let kept = NOW + HOUR + 1;
    db.store
        .record_step(&key, &owner, "charge", br#""ch_1""#, at(kept))
        .await
        .unwrap();
    let raw = [0xff, 0x00, 0xfe];
    db.store
        .record_step(&key, &owner, "not.json", &raw, at(kept + 1))
        .await
        .unwrap();
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(
        item["steps"],
        AttributeValue::M(HashMap::from([
            ("charge".to_owned(), b(br#""ch_1""#)),
            ("not.json".to_owned(), b(&raw)),
        ]))
    );
    assert_eq!(item["steps_kept_until_ms"], n(kept + 1));
    assert_eq!(item["steps_ttl"], seconds(kept + 1));
    assert_eq!(
        item["ttl"],
        seconds(kept + 1),
        "the sweeper waits for the steps"
    );
    let steps = steps_of(db.store.get(&key).await.unwrap());
    assert_eq!(steps.get("charge"), Some(&br#""ch_1""#[..]));
    assert_eq!(steps.get("not.json"), Some(&raw[..]));
    assert_eq!(steps.kept_until(), at(kept + 1));

    // A step recorded with an earlier instant (a clock behind the previous owner's) keeps the
    // later one: the first update is refused, the second writes the larger values.
    let before = db.requests.count();
    db.store
        .record_step(&key, &owner, "ledger", b"7", at(kept - HOUR))
        .await
        .unwrap();
    assert_eq!(
        db.requests.operations_since(before),
        ["UpdateItem", "UpdateItem"]
    );
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["steps_kept_until_ms"], n(kept + 1));
    assert_eq!(item["ttl"], seconds(kept + 1));
    let steps = steps_of(db.store.get(&key).await.unwrap());
    assert_eq!(steps.len(), 3);
    assert_eq!(steps.kept_until(), at(kept + 1));
}

async fn the_sweeper_ttl_covers_both_the_lease_and_the_steps() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved(&db, "ttl").await;
    let kept = NOW + HOUR;
    db.store
        .record_step(&key, &owner, "charge", b"1", at(kept))
        .await
        .unwrap();

    // A renewal inside the steps' TTL leaves `ttl` at the steps' in its one update.
    let before = db.requests.count();
    db.store
        .renew(&key, &owner, at(NOW + 60_000))
        .await
        .unwrap();
    assert_eq!(db.requests.operations_since(before), ["UpdateItem"]);
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["live_until_ms"], n(NOW + 60_000));
    assert_eq!(item["ttl"], seconds(kept));

    // A lease that outlasts the steps moves `ttl` past them, in a second update.
    let long_lease = NOW + 2 * HOUR;
    let before = db.requests.count();
    db.store.renew(&key, &owner, at(long_lease)).await.unwrap();
    assert_eq!(
        db.requests.operations_since(before),
        ["UpdateItem", "UpdateItem"]
    );
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["live_until_ms"], n(long_lease));
    assert_eq!(item["ttl"], seconds(long_lease + LEASE_GRACE_MS));

    // A step kept for less than the lease does not pull `ttl` below the lease's.
    db.store
        .record_step(&key, &owner, "ledger", b"2", at(kept + 1_000))
        .await
        .unwrap();
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["steps_kept_until_ms"], n(kept + 1_000));
    assert_eq!(item["steps_ttl"], seconds(kept + 1_000));
    assert_eq!(item["ttl"], seconds(long_lease + LEASE_GRACE_MS));
}

async fn a_release_with_steps_ends_the_lease_and_keeps_the_rest() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved(&db, "release").await;
    db.store
        .record_step(&key, &owner, "charge", b"1", at(NOW + HOUR))
        .await
        .unwrap();
    let held = db.get_raw(&key).await.unwrap();
    db.store.release(&key, &owner).await.unwrap();
    let released = db.get_raw(&key).await.unwrap();
    let mut expected = held;
    expected.insert("live_until_ms".into(), n(0));
    assert_eq!(released, expected, "only the lease changes, to the epoch");

    // A release retried after its answer was lost changes nothing more.
    db.store.release(&key, &owner).await.unwrap();
    assert_eq!(db.get_raw(&key).await.unwrap(), expected);
    let stranger = db.store.release(&key, &OwnerToken::generate()).await;
    assert!(
        matches!(stranger, Err(StoreError::LeaseLost)),
        "{stranger:?}"
    );
    assert_eq!(db.get_raw(&key).await.unwrap(), expected);
}

async fn takeovers_keep_the_same_calls_steps_and_drop_another_calls() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved_until(&db, "takeover", NOW + 1_000).await;
    db.store
        .record_step(
            &key,
            &owner,
            "charge",
            b"1",
            at(NOW + 10_000),
        )
        .await
        .unwrap();

    let record = taken_over_by_the_same_call(&db, &key).await;
    assert_eq!(record.steps().get("charge"), Some(&b"1"[..]));
    assert_eq!(record.steps().kept_until(), at(NOW + 10_000));
    assert_eq!(
        db.store.get(&key).await.unwrap(),
        Some(Record::InProgress(record))
    );
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(
        item["ttl"],
        seconds(NOW + 31_000 + LEASE_GRACE_MS),
        "the new lease outlasts the steps"
    );

    // Once the lease is abandoned and the steps expired, another call takes the key with
    // none of them.
    let late = NOW + 31_000 + LEASE_GRACE_MS;
    let other = claim("b", late + 30_000, late);
    let Reservation::TookOver { record, .. } = db.store.reserve(&key, &other).await.unwrap() else {
        panic!("another call takes an abandoned record over")
    };
    assert!(record.steps().is_empty(), "{record:?}");
    assert_eq!(record.attempt(), 1);
    let item = db.get_raw(&key).await.unwrap();
    assert_eq!(item["steps"], AttributeValue::M(HashMap::new()));
    assert!(!item.contains_key("steps_kept_until_ms"), "{item:?}");
    assert!(!item.contains_key("steps_ttl"), "{item:?}");
}

async fn a_record_from_before_steps_takes_them_after_a_takeover() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved_until(&db, "before-steps", NOW + 1_000).await;
    let mut item = db.get_raw(&key).await.unwrap();
    item.remove("steps");
    db.put_raw(&key, item).await;
    let refused = db
        .store
        .record_step(&key, &owner, "charge", b"1", at(NOW + HOUR))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Corrupt(_))),
        "{refused:?}"
    );

    let record = taken_over_by_the_same_call(&db, &key).await;
    db.store
        .record_step(&key, record.owner(), "charge", b"1", at(NOW + HOUR))
        .await
        .unwrap();
    let steps = steps_of(db.store.get(&key).await.unwrap());
    assert_eq!(steps.get("charge"), Some(&b"1"[..]));
}

/// Why `refused` refused a step as too large, and what it says; it must be that.
fn step_too_large(refused: &Result<(), StoreError>) -> (&StepTooLarge, String) {
    let Err(StoreError::Rejected(source)) = refused else {
        panic!("expected Rejected, got {refused:?}")
    };
    let too_large = source
        .downcast_ref::<StepTooLarge>()
        .expect("a StepTooLarge");
    (too_large, source.to_string())
}

async fn oversized_steps_are_refused() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let (key, owner) = reserved(&db, "huge").await;

    // Alone over the limit: refused before any request.
    let before = db.requests.count();
    let refused = db
        .store
        .record_step(
            &key,
            &owner,
            "huge",
            &vec![b'x'; MAX_ITEM_SIZE],
            at(NOW + HOUR),
        )
        .await;
    let (too_large, source) = step_too_large(&refused);
    assert_eq!(too_large.step, "huge");
    assert!(too_large.size.is_some_and(|size| size > MAX_ITEM_SIZE));
    assert!(source.contains("item limit"), "{source}");
    let empty = db
        .store
        .record_step(&key, &owner, "", b"1", at(NOW + HOUR))
        .await;
    assert!(matches!(empty, Err(StoreError::Rejected(_))), "{empty:?}");
    assert_eq!(db.requests.count(), before, "no request for a refused step");

    // Over the limit with the steps before it: DynamoDB refuses the update.
    let half = vec![b'x'; MAX_ITEM_SIZE * 5 / 8];
    db.store
        .record_step(&key, &owner, "first", &half, at(NOW + HOUR))
        .await
        .unwrap();
    let refused = db
        .store
        .record_step(&key, &owner, "second", &half, at(NOW + HOUR))
        .await;
    let (too_large, source) = step_too_large(&refused);
    assert_eq!((too_large.step.as_str(), too_large.size), ("second", None));
    assert!(
        source.contains("steps recorded before"),
        "{source}"
    );
}

async fn step_attribute_names_are_configurable() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let names = AttributeNames {
        steps: "Done".into(),
        steps_kept_until: "DoneUntil".into(),
        steps_ttl: "size".into(), // a reserved word in DynamoDB expressions
        ..AttributeNames::default()
    };
    let store = DynamoDbStore::builder(db.client.clone(), unique_table_name())
        .attribute_names(names)
        .build();
    store.create_table().await.unwrap();
    let key = key(&db, "names");
    let first = claim("a", NOW + 1_000, NOW);
    let owner = first.record().owner();
    store.reserve(&key, &first).await.unwrap();
    store
        .record_step(&key, owner, "charge", b"1", at(NOW + HOUR))
        .await
        .unwrap();
    store.renew(&key, owner, at(NOW + 2_000)).await.unwrap();
    store.release(&key, owner).await.unwrap();
    let item = db
        .client
        .get_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S(store.item_key(&key)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the released item");
    assert_eq!(
        item["Done"],
        AttributeValue::M(HashMap::from([("charge".to_owned(), b(b"1"))]))
    );
    assert_eq!(item["DoneUntil"], n(NOW + HOUR));
    assert_eq!(item["size"], seconds(NOW + HOUR));
    assert_eq!(item["live_until_ms"], n(0));
    for default in ["steps", "steps_kept_until_ms", "steps_ttl"] {
        assert!(!item.contains_key(default), "{default}: {item:?}");
    }
    let same = claim("a", NOW + 30_000, NOW + 1);
    let Reservation::TookOver { record, .. } = store.reserve(&key, &same).await.unwrap() else {
        panic!("the same call takes a released record over")
    };
    assert_eq!(record.steps().get("charge"), Some(&b"1"[..]));
}

async fn a_release_that_keeps_steps_wakes_a_waiting_duplicate() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let idem = Idempotency::from_arc(db.store.clone());
    let call = Call::new(
        idem.key("steps").part("wake").finish().unwrap(),
        Fingerprint::of("wake").unwrap(),
    )
    .with_lease(Duration::from_secs(60));
    let charges = Arc::new(AtomicUsize::new(0));
    let (charged_tx, charged_rx) = tokio::sync::oneshot::channel();
    let (fail_tx, fail_rx) = tokio::sync::oneshot::channel::<()>();
    let first = {
        let (idem, call, charges) = (idem.clone(), call.clone(), charges.clone());
        tokio::spawn(async move {
            idem.run(call, async {
                step("charge", async {
                    Ok::<_, Error>(charges.fetch_add(1, Ordering::SeqCst))
                })
                .await?;
                charged_tx.send(()).unwrap();
                fail_rx.await.unwrap();
                Err::<usize, _>(Error::InvalidKey("declined".into()))
            })
            .await
        })
    };
    charged_rx.await.unwrap();
    let before = db.requests.count();
    let waiter = {
        let (idem, call, charges) = (idem.clone(), call.clone(), charges.clone());
        tokio::spawn(async move {
            idem.run(call.with_wait(Duration::from_secs(50)), async {
                step("charge", async {
                    Ok::<_, Error>(charges.fetch_add(1, Ordering::SeqCst))
                })
                .await
            })
            .await
        })
    };
    let polled = async {
        while !db
            .requests
            .operations_since(before)
            .iter()
            .any(|op| op == "GetItem")
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), polled)
        .await
        .expect("the duplicate waits, polling");
    fail_tx.send(()).unwrap();
    assert!(matches!(first.await.unwrap(), Err(Error::InvalidKey(_))));
    // Well before the lease (60 s) would have woken it.
    let resumed = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the released lease wakes the waiter")
        .unwrap()
        .expect("the waiter takes the key over and resumes");
    assert_eq!(resumed.value, 0, "the charge is replayed from the record");
    assert!(!resumed.replayed);
    assert_eq!(charges.load(Ordering::SeqCst), 1);
}

idem_tests::module_tests! {
    async steps_are_stored_byte_for_byte_with_their_expiry,
    async the_sweeper_ttl_covers_both_the_lease_and_the_steps,
    async a_release_with_steps_ends_the_lease_and_keeps_the_rest,
    async takeovers_keep_the_same_calls_steps_and_drop_another_calls,
    async a_record_from_before_steps_takes_them_after_a_takeover,
    async oversized_steps_are_refused,
    async step_attribute_names_are_configurable,
    async a_release_that_keeps_steps_wakes_a_waiting_duplicate,
}
