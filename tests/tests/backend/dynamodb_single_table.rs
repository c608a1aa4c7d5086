//! Single-table designs: the DynamoDB store on a table whose primary key has a sort key too,
//! with the record's key in the sort key (Powertools' `sort_key_attr` and `static_pk_value`)
//! or in the partition key, beside other items of the application. Calls, listing, purging
//! and `verify()`, against a real server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_dynamodb::types::AttributeValue;
use idem_core::store::{Inventory, ListQuery};
use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency, Key, StoreError};
use idem_stores::dynamodb::{DynamoDbStore, KeyTooLong, Misconfigured, SortKey};
use idem_test_servers::dynamodb::TestDynamo;
use idem_tests::inventory::{complete, entries, key, now, HOUR, SECOND};

use super::dynamodb_misconfigured::misconfiguration;

/// Powertools' layout: one partition, the key in the sort key.
fn one_partition() -> SortKey {
    SortKey::holding_key("sk", "idempotency#payments")
}

/// The reverse: the key in the partition key, one sort key value.
fn fixed_sort_value() -> SortKey {
    SortKey::fixed("sk", "IDEMPOTENCY")
}

/// Writes an item of the application's own, not idem's, into the store's table.
async fn foreign_item(db: &TestDynamo, pk: &str, sk: &str) {
    db.client
        .put_item()
        .table_name(db.table())
        .item("pk", AttributeValue::S(pk.into()))
        .item("sk", AttributeValue::S(sk.into()))
        .item("name", AttributeValue::S("not a record".into()))
        .send()
        .await
        .expect("the application writes its item");
}

/// How many items the table holds, read past the store.
async fn items(db: &TestDynamo) -> Vec<HashMap<String, AttributeValue>> {
    db.client
        .scan()
        .table_name(db.table())
        .consistent_read(true)
        .send()
        .await
        .expect("a scan")
        .items
        .unwrap_or_default()
}

/// One call that runs once and replays to its retry, beside the application's items; its item
/// sits where `sort_key` says.
async fn calls_run_once_beside_other_items(sort_key: SortKey) {
    let Some(db) = TestDynamo::with_sort_key(sort_key.clone()).await else {
        return;
    };
    db.store
        .verify()
        .await
        .expect("create_table made the sort key");
    foreign_item(&db, "order#1", "details").await;
    foreign_item(&db, sort_key.value(), "profile").await;
    foreign_item(&db, "profile", sort_key.value()).await;

    let idem = Idempotency::from_arc(db.store.clone());
    let runs = AtomicUsize::new(0);
    let charge = || {
        let call = Call::new(
            idem.key("charge").part("o-1").finish().unwrap(),
            Fingerprint::of(&"o-1").unwrap(),
        );
        idem.run(call, async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(42_u64)
        })
    };
    let first = charge().await.unwrap();
    let retry = charge().await.unwrap();
    assert_eq!((first.value, first.replayed), (42, false));
    assert_eq!((retry.value, retry.replayed), (42, true));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the retry replays");

    let key = idem.key("charge").part("o-1").finish().unwrap();
    let item = db.get_raw(&key).await.expect("the record's item");
    let stored = AttributeValue::S(db.store.item_key(&key));
    let fixed = AttributeValue::S(sort_key.value().into());
    if sort_key.holds_key() {
        assert_eq!(item["sk"], stored);
        assert_eq!(item["pk"], fixed);
    } else {
        assert_eq!(item["pk"], stored);
        assert_eq!(item["sk"], fixed);
    }
    assert_eq!(
        items(&db).await.len(),
        4,
        "three items of the application, one record"
    );

    let (listed, _) = entries(inventory(&db.store), "", 100).await;
    let listed: Vec<Key> = listed.into_iter().map(|(key, _)| key).collect();
    assert_eq!(listed, vec![key.clone()], "only the record is listed");
    let page = inventory(&db.store)
        .list(&ListQuery::new("", 100))
        .await
        .unwrap();
    assert!(
        page.unkeyed.is_empty(),
        "the application's items are not ours: {page:?}"
    );

    db.store.delete(&key).await.unwrap();
    assert_eq!(db.store.get(&key).await.unwrap(), None);
    assert_eq!(items(&db).await.len(), 3, "the application's items stay");
}

async fn calls_run_once_with_the_key_in_the_sort_key() {
    calls_run_once_beside_other_items(one_partition()).await;
}

async fn calls_run_once_with_the_key_in_the_partition_key() {
    calls_run_once_beside_other_items(fixed_sort_value()).await;
}

fn inventory(store: &DynamoDbStore) -> &dyn Inventory {
    Store::inventory(store).expect("the DynamoDB store lists")
}

/// A purge of many batches deletes the expired records alone, leaves the application's items,
/// and reads the records' partition with `Query` (never a `Scan` of the table) when the sort
/// key holds the keys.
async fn purging(sort_key: SortKey) {
    let Some(db) = TestDynamo::with_sort_key(sort_key.clone()).await else {
        return;
    };
    let store = &*db.store;
    foreign_item(&db, "order#1", "details").await;
    foreign_item(&db, sort_key.value(), "profile").await;
    let k = |name: String| key("purge", &[&name]);
    for n in 0..7 {
        complete(
            store,
            &k(format!("expired-{n}")),
            now() - 2 * HOUR,
            now() - SECOND,
        )
        .await;
    }
    for n in 0..3 {
        complete(store, &k(format!("live-{n}")), now(), now() + HOUR).await;
    }

    let since = db.requests.count();
    let mut purged = 0;
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let progress = inventory(store)
            .purge_expired_from(now(), 3, cursor.as_deref())
            .await
            .unwrap();
        purged += progress.deleted;
        cursor = progress.cursor;
        if cursor.is_none() {
            break;
        }
    }
    let reads: Vec<String> = db
        .requests
        .operations_since(since)
        .into_iter()
        .filter(|operation| operation == "Scan" || operation == "Query")
        .collect();
    assert_eq!(cursor, None, "the purge ends");
    assert_eq!(purged, 7);
    for n in 0..3 {
        assert!(store.get(&k(format!("live-{n}"))).await.unwrap().is_some());
    }
    assert_eq!(
        items(&db).await.len(),
        2 + 3,
        "the application's items stay"
    );
    let expected = if sort_key.holds_key() {
        "Query"
    } else {
        "Scan"
    };
    assert!(
        !reads.is_empty() && reads.iter().all(|read| read == expected),
        "pages read with {expected}: {reads:?}"
    );
}

async fn purging_with_the_key_in_the_sort_key_queries_one_partition() {
    purging(one_partition()).await;
}

async fn purging_with_the_key_in_the_partition_key_scans() {
    purging(fixed_sort_value()).await;
}

/// `verify()` names a sort key the table lacks, another one, and one the store lacks.
async fn verify_names_a_sort_key_that_does_not_match() {
    let Some(db) = TestDynamo::with_sort_key(one_partition()).await else {
        return;
    };
    let with = |sort_key: Option<SortKey>| {
        let builder = DynamoDbStore::builder(db.client.clone(), db.table());
        match sort_key {
            Some(sort_key) => builder.sort_key(sort_key),
            None => builder,
        }
        .build()
    };
    with(Some(fixed_sort_value()))
        .verify()
        .await
        .expect("either layout fits a table with that sort key");

    let other = misconfiguration(
        with(Some(SortKey::holding_key("SK", "x")))
            .verify()
            .await
            .unwrap_err(),
    );
    assert!(
        matches!(other, Misconfigured::WrongSortKey { .. }),
        "{other:?}"
    );
    assert!(other.to_string().contains("`sk`"), "{other}");

    let none = misconfiguration(with(None).verify().await.unwrap_err());
    assert!(matches!(none, Misconfigured::SortKey { .. }), "{none:?}");
    assert!(none.to_string().contains("sort_key"), "{none}");

    let Some(plain) = TestDynamo::start().await else {
        return;
    };
    let missing = DynamoDbStore::builder(plain.client.clone(), plain.table())
        .sort_key(one_partition())
        .build();
    let missing = misconfiguration(missing.verify().await.unwrap_err());
    assert!(
        matches!(missing, Misconfigured::WrongSortKey { .. }),
        "{missing:?}"
    );
    assert!(missing.to_string().contains("has none"), "{missing}");
}

/// A sort key holds 1024 bytes: a key that fits idem's own limit but not, with the store's
/// prefix, DynamoDB's for a sort key is refused before any request, as too long for the
/// attribute that holds it, and the body never runs.
async fn a_key_too_long_for_a_sort_key_is_refused() {
    let Some(db) = TestDynamo::with_sort_key(one_partition()).await else {
        return;
    };
    let store = DynamoDbStore::builder(db.client.clone(), db.table())
        .sort_key(one_partition())
        .prefix("p".repeat(60))
        .build();
    let idem = Idempotency::new(store.clone());
    let long = "x".repeat(990);
    let key = idem.key("charge").part(&long).finish().unwrap();
    let call = Call::new(key.clone(), Fingerprint::of(&"o-1").unwrap());
    let since = db.requests.count();
    let error = idem
        .run(call, async {
            panic!("the body must not run") as Result<u64, Error>
        })
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Rejected { .. }), "{error:?}");
    assert_eq!(db.requests.count(), since, "nothing was sent");
    let refused = store.primary_key(&key).unwrap_err();
    let StoreError::Rejected(source) = refused else {
        panic!("{refused:?}")
    };
    let too_long = source.downcast::<KeyTooLong>().expect("KeyTooLong");
    assert_eq!(too_long.limit, 1024);
    let plain = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("p".repeat(60))
        .build();
    assert!(
        plain.primary_key(&key).is_ok(),
        "a partition key holds 2048 bytes"
    );
}

idem_tests::module_tests! {
    async calls_run_once_with_the_key_in_the_sort_key,
    async calls_run_once_with_the_key_in_the_partition_key,
    async purging_with_the_key_in_the_sort_key_queries_one_partition,
    async purging_with_the_key_in_the_partition_key_scans,
    async verify_names_a_sort_key_that_does_not_match,
    async a_key_too_long_for_a_sort_key_is_refused,
}
