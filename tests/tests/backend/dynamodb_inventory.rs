//! The DynamoDB store's inventory against a real server: listing by prefix a `Scan` a page,
//! paging, keys that parse back, corrupt and foreign items, purging (and a key reserved again
//! between the purge's scan and its delete), and the operator's calls on a handle.

use std::sync::Mutex;

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, SharedInterceptor};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use idem_conformance::Target as _;
use idem_core::{
    store::{Record, Store},
    Key, StoreError,
};
use idem_stores::dynamodb::DynamoDbStore;
use idem_test_servers::dynamodb::{client, ClientOptions, TestDynamo};
use idem_tests::inventory::{
    self, complete, entries, key, now, purge_to_the_end, reserve, set,
    HOUR, SECOND,
};
use idem_tests::inventory_cases;

/// Another store on `db`'s table, under the prefix `prefix`.
fn other(db: &TestDynamo, prefix: &str) -> DynamoDbStore {
    DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix(prefix)
        .build()
}

async fn listing_finds_the_records_under_a_prefix_and_nothing_outside_it() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    inventory_cases::charges_under_a_prefix(&*db.store, &other(&db, "other%|_")).await;
}

async fn pages_of_two_visit_each_of_five_keys_once() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    let written = inventory_cases::five_keys_to_page(store).await;
    // The scan reads the `pagf` items too and the filter drops them: pages may come back
    // short, or empty.
    let prefix = Key::function_prefix("idem", "page");
    let (found, pages) = entries(inventory::of(store), &prefix, 2).await;
    let keys: Vec<Key> = found.into_iter().map(|(key, _)| key).collect();
    assert_eq!(keys.len(), written.len(), "each key once: {keys:?}");
    assert_eq!(set(&keys), set(&written));
    assert!(
        (3..=6).contains(&pages),
        "eight items, two a scan: {pages} pages"
    );
}

async fn keys_round_trip_and_prefixes_are_not_patterns() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    inventory_cases::keys_round_trip_and_prefixes_are_not_patterns(&*db.store).await;
}

async fn a_corrupt_item_is_listed_as_an_error_and_a_foreign_item_is_skipped() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    let corrupt = inventory_cases::two_records_around(store).await;
    assert!(db.corrupt(&corrupt).await);
    // An item under the store's prefix that holds no idempotency key (no `|` after it).
    db.client
        .put_item()
        .table_name(db.table())
        .item("pk", AttributeValue::S("|idem".into()))
        .item("state", AttributeValue::S("completed".into()))
        .send()
        .await
        .unwrap();

    for limit in [1, 100] {
        let (found, _) = entries(inventory::of(store), "", limit).await;
        let keys: Vec<Key> = found.iter().map(|(key, _)| key.clone()).collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            set(&keys),
            set(&[key("mixed", &["a"]), corrupt.clone(), key("mixed", &["c"])])
        );
        for (key, record) in &found {
            if *key == corrupt {
                assert!(matches!(record, Err(StoreError::Corrupt(_))), "{record:?}");
            } else {
                assert!(record.is_ok(), "`{key}`: {record:?}");
            }
        }
    }
}

async fn a_purge_deletes_what_stopped_counting_and_keeps_the_rest() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let other = other(&db, "other");
    inventory_cases::a_purge_deletes_what_stopped_counting_and_keeps_the_rest(&*db.store, &other)
        .await;
}

/// A purge that goes on from its cursor reads each item once: one `Scan` of at most a batch
/// of items per call, only the first from the start of the table, however many batches it
/// takes; the expired items go, the live ones and another prefix's stay.
async fn a_purge_from_a_cursor_reads_each_item_once() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    let long_ago = now() - 2 * HOUR;
    let k = |name: String| key("purge", &[&name]);
    for n in 0..12 {
        complete(store, &k(format!("expired-{n}")), long_ago, now() - SECOND).await;
    }
    for n in 0..6 {
        complete(store, &k(format!("live-{n}")), now(), now() + HOUR).await;
    }
    let other = other(&db, "other");
    for n in 0..3 {
        complete(&other, &k(format!("theirs-{n}")), long_ago, now() - SECOND).await;
    }
    let items: usize = 12 + 6 + 3;
    let batch = 4;

    let since = db.requests.count();
    let (calls, purged) = purge_to_the_end(inventory::of(store), batch).await;
    assert!(calls <= items, "{calls} calls for {items} items");
    assert_eq!(purged, 12);
    let scans: Vec<_> = db
        .requests
        .since(since)
        .into_iter()
        .filter(|request| request.operation == "Scan")
        .collect();
    let from_the_start = scans
        .iter()
        .filter(|scan| !scan.body.contains("ExclusiveStartKey"))
        .count();
    assert_eq!(
        from_the_start, 1,
        "only the first batch scans from the start: {scans:#?}"
    );
    assert!(
        scans
            .iter()
            .all(|scan| scan.body.contains(&format!("\"Limit\":{batch}"))),
        "each Scan reads at most a batch: {scans:#?}"
    );
    // The table read once: a batch of items a Scan, and one more for the end.
    assert!(
        scans.len() <= items.div_ceil(batch as usize) + 1,
        "{} Scans for {items} items",
        scans.len()
    );
    for n in 0..12 {
        assert_eq!(store.get(&k(format!("expired-{n}"))).await.unwrap(), None);
    }
    for n in 0..6 {
        assert!(store.get(&k(format!("live-{n}"))).await.unwrap().is_some());
    }
    for n in 0..3 {
        assert!(other
            .get(&k(format!("theirs-{n}")))
            .await
            .unwrap()
            .is_some());
    }
}

/// Runs `action` on another thread, with a runtime of its own, before the first request of
/// `operation` is sent.
struct Before {
    operation: &'static str,
    action: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl std::fmt::Debug for Before {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Before({})", self.operation)
    }
}

impl Intercept for Before {
    fn name(&self) -> &'static str {
        "Before"
    }

    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<Metadata>().map(Metadata::name) != Some(self.operation) {
            return Ok(());
        }
        if let Some(action) = self.action.lock().unwrap().take() {
            std::thread::spawn(action).join().expect("the action ran");
        }
        Ok(())
    }
}

async fn a_purge_keeps_a_key_reserved_again_between_its_scan_and_its_delete() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let expired = key("race", &["expired"]);
    complete(&*db.store, &expired, now() - HOUR, now() - SECOND).await;
    // Once the scan has found the expired item, and before the purge deletes it, another
    // caller reserves the key again.
    let (endpoint, table) = (db.moto.endpoint().to_owned(), db.table().to_owned());
    let reserved_key = expired.clone();
    let again: Box<dyn FnOnce() + Send> = Box::new(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let caller = client(&endpoint, ClientOptions::default(), []);
            let caller = DynamoDbStore::new(caller, table);
            reserve(&caller, &reserved_key, now() + HOUR, now()).await;
        });
    });
    let before = Before {
        operation: "DeleteItem",
        action: Mutex::new(Some(again)),
    };
    let purging = DynamoDbStore::new(
        client(
            db.moto.endpoint(),
            ClientOptions::default(),
            [SharedInterceptor::new(before)],
        ),
        db.table(),
    );

    assert_eq!(
        inventory::of(&purging).purge_expired(now(), 10).await.unwrap(),
        0
    );
    let record = db.store.get(&expired).await.unwrap();
    assert!(
        matches!(&record, Some(Record::InProgress(held)) if held.lease_until() == now() + HOUR),
        "the new reservation is kept: {record:?}"
    );
}

async fn the_handle_lists_inspects_releases_and_purges() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    inventory::the_handle_lists_inspects_releases_and_purges(db.store.clone()).await;
}

idem_tests::module_tests! {
    async listing_finds_the_records_under_a_prefix_and_nothing_outside_it,
    async pages_of_two_visit_each_of_five_keys_once,
    async keys_round_trip_and_prefixes_are_not_patterns,
    async a_corrupt_item_is_listed_as_an_error_and_a_foreign_item_is_skipped,
    async a_purge_deletes_what_stopped_counting_and_keeps_the_rest,
    async a_purge_from_a_cursor_reads_each_item_once,
    async a_purge_keeps_a_key_reserved_again_between_its_scan_and_its_delete,
    async the_handle_lists_inspects_releases_and_purges,
}
