//! The DynamoDB store's inventory against a real server: listing by prefix a `Scan` a page,
//! paging, keys that parse back, corrupt and foreign items, purging (and a key reserved again
//! between the purge's scan and its delete), and the operator's calls on a handle.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents, SharedInterceptor};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use idem_conformance::Target as _;
use idem_core::store::Inventory;
use idem_core::{
    store::{Record, Store, LEASE_GRACE},
    Key, KeyBuilder, StoreError,
};
use idem_stores::dynamodb::DynamoDbStore;
use idem_test_servers::dynamodb::{client, ClientOptions, TestDynamo};
use idem_tests::inventory::{self, complete, entries, key, now, reserve, set, HOUR, SECOND};

/// The keys listed under `prefix`, each listed once and without an error.
async fn listed(inventory: &dyn Inventory, prefix: &str, limit: u32) -> BTreeSet<Key> {
    let (entries, _) = entries(inventory, prefix, limit).await;
    let mut keys = BTreeSet::new();
    for (key, record) in entries {
        assert!(record.is_ok(), "`{key}`: {record:?}");
        assert!(keys.insert(key.clone()), "`{key}` is listed twice");
    }
    keys
}

fn inventory(store: &DynamoDbStore) -> &dyn Inventory {
    Store::inventory(store).expect("the DynamoDB store lists")
}

async fn listing_finds_the_records_under_a_prefix_and_nothing_outside_it() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    let other = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("other%|_")
        .build();
    let mut charges: Vec<Key> = (1..=3).map(|n| key("charge", &[&n.to_string()])).collect();
    for charge in &charges {
        complete(store, charge, now(), now() + HOUR).await;
    }
    charges.push(key("charge", &["4"]));
    reserve(store, &charges[3], now() + HOUR, now()).await;
    complete(store, &key("chargeback", &["1"]), now(), now() + HOUR).await;
    complete(store, &key("refund", &["1"]), now(), now() + HOUR).await;
    complete(&other, &key("charge", &["9"]), now(), now() + HOUR).await;

    let prefix = Key::function_prefix("idem", "charge");
    let (found, _) = entries(inventory(store), &prefix, 100).await;
    assert_eq!(found.len(), 4, "{found:?}");
    for (key, record) in &found {
        assert!(charges.contains(key), "`{key}` is a charge");
        let got = store.get(key).await.unwrap();
        assert_eq!(
            record.as_ref().ok(),
            got.as_ref(),
            "`{key}` is listed as stored"
        );
    }

    assert_eq!(listed(inventory(store), "", 100).await.len(), 6);
    let theirs = listed(inventory(&other), "", 100).await;
    assert_eq!(
        theirs,
        set(&[key("charge", &["9"])]),
        "a store lists its own prefix"
    );
    assert!(listed(inventory(store), "idem|nothing|", 10)
        .await
        .is_empty());
}

async fn pages_of_two_visit_each_of_five_keys_once() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    let written: Vec<Key> = ["e", "a", "d", "b", "c"]
        .into_iter()
        .map(|part| key("page", &[part]))
        .collect();
    for (n, key) in written.iter().enumerate() {
        if n % 2 == 0 {
            complete(store, key, now(), now() + HOUR).await;
        } else {
            reserve(store, key, now() + HOUR, now()).await;
        }
    }
    // Items the scan reads and the filter drops: pages may come back short, or empty.
    for part in ["a", "z", "0"] {
        complete(store, &key("pagf", &[part]), now(), now() + HOUR).await;
    }

    let prefix = Key::function_prefix("idem", "page");
    let (found, pages) = entries(inventory(store), &prefix, 2).await;
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
    let store = &*db.store;
    let awkward = [
        "a|b",
        "100%",
        "%7C",
        "under_score",
        "back\\slash",
        "ünïcødé 🔑",
        "日本語",
    ];
    let mut written = Vec::new();
    for part in awkward {
        let key = KeyBuilder::new("idem", "odd|name%_")
            .scope(Some("tenant|7%"))
            .part(part)
            .part("second")
            .finish()
            .unwrap();
        complete(store, &key, now(), now() + HOUR).await;
        written.push(key);
    }
    let prefix = Key::function_prefix("idem", "odd|name%_");
    let keys = listed(inventory(store), &prefix, 3).await;
    assert_eq!(keys, set(&written));
    for key in &keys {
        assert_eq!(&Key::parse(key.as_str()).unwrap(), key);
        assert!(
            store.get(key).await.unwrap().is_some(),
            "`{key}` names its record"
        );
    }

    // Each pair's first key starts with the prefix; the second would match it as a pattern.
    let traps = [
        ("p_q", "pxq", "p_"),
        ("p%q", "pzq", "p%"),
        ("p\\q", "pq", "p\\"),
    ];
    for (inside, outside, _) in traps {
        for part in [inside, outside] {
            complete(store, &key("trap", &[part]), now(), now() + HOUR).await;
        }
    }
    for (inside, _, text) in traps {
        let prefix = key("trap", &[text]).as_str().to_owned();
        let keys = listed(inventory(store), &prefix, 10).await;
        assert_eq!(
            keys,
            set(&[key("trap", &[inside])]),
            "the prefix `{prefix}`"
        );
    }
}

async fn a_corrupt_item_is_listed_as_an_error_and_a_foreign_item_is_skipped() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    let store = &*db.store;
    for part in ["a", "c"] {
        complete(store, &key("mixed", &[part]), now(), now() + HOUR).await;
    }
    let corrupt = key("mixed", &["b"]);
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
        let (found, _) = entries(inventory(store), "", limit).await;
        let keys: BTreeSet<&Key> = found.iter().map(|(key, _)| key).collect();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            keys,
            BTreeSet::from([&key("mixed", &["a"]), &corrupt, &key("mixed", &["c"])])
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
    let store = &*db.store;
    let long_ago = now() - 2 * HOUR;
    let k = |name: &str| key("purge", &[name]);

    complete(store, &k("expired"), long_ago, now() - SECOND).await;
    reserve(store, &k("abandoned"), now() - LEASE_GRACE, long_ago).await;
    let owner = reserve(store, &k("steps-expired"), long_ago + SECOND, long_ago).await;
    store
        .record_step(&k("steps-expired"), &owner, "charge", b"1", now())
        .await
        .unwrap();
    let gone = ["expired", "abandoned", "steps-expired"];

    complete(store, &k("live"), now(), now() + SECOND).await;
    reserve(store, &k("running"), now() + HOUR, now()).await;
    let in_grace = now() - LEASE_GRACE + Duration::from_millis(1);
    reserve(store, &k("in-grace"), in_grace, long_ago).await;
    let owner = reserve(store, &k("steps-held"), long_ago + SECOND, long_ago).await;
    store
        .record_step(&k("steps-held"), &owner, "charge", b"1", now() + SECOND)
        .await
        .unwrap();
    let owner = reserve(store, &k("released"), now() + HOUR, now()).await;
    store
        .record_step(&k("released"), &owner, "charge", b"1", now() + HOUR)
        .await
        .unwrap();
    store.release(&k("released"), &owner).await.unwrap();
    // Expired, then reserved again: it counts again.
    complete(store, &k("reserved-again"), long_ago, now() - HOUR).await;
    reserve(store, &k("reserved-again"), now() + HOUR, now()).await;
    // Another store's expired item in the same table: its store purges it, not this one.
    let other = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("other")
        .build();
    complete(&other, &k("theirs"), long_ago, now() - SECOND).await;
    let kept = [
        "live",
        "running",
        "in-grace",
        "steps-held",
        "released",
        "reserved-again",
    ];
    let mut before = Vec::new();
    for name in kept {
        before.push(store.get(&k(name)).await.unwrap());
    }

    assert_eq!(inventory(store).purge_expired(now(), 2).await.unwrap(), 2);
    assert_eq!(inventory(store).purge_expired(now(), 2).await.unwrap(), 1);
    assert_eq!(inventory(store).purge_expired(now(), 2).await.unwrap(), 0);
    for name in gone {
        assert_eq!(
            store.get(&k(name)).await.unwrap(),
            None,
            "`{name}` is purged"
        );
    }
    for (name, before) in kept.into_iter().zip(before) {
        let after = store.get(&k(name)).await.unwrap();
        assert!(after.is_some(), "`{name}` is kept");
        assert_eq!(after, before, "`{name}` is unchanged");
    }
    assert!(other.get(&k("theirs")).await.unwrap().is_some());
    assert_eq!(inventory(&other).purge_expired(now(), 10).await.unwrap(), 1);
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
    let other = DynamoDbStore::builder(db.client.clone(), db.table())
        .prefix("other")
        .build();
    for n in 0..3 {
        complete(&other, &k(format!("theirs-{n}")), long_ago, now() - SECOND).await;
    }
    let items: usize = 12 + 6 + 3;
    let batch = 4;

    let since = db.requests.count();
    let mut purged = 0;
    let mut cursor: Option<String> = None;
    let mut calls = 0;
    loop {
        let progress = inventory(store)
            .purge_expired_from(now(), batch, cursor.as_deref())
            .await
            .unwrap();
        assert!(progress.deleted <= u64::from(batch), "{progress:?}");
        purged += progress.deleted;
        calls += 1;
        assert!(calls <= items, "the purge ends");
        match progress.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
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
        inventory(&purging).purge_expired(now(), 10).await.unwrap(),
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
