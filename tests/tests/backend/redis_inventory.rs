//! The Redis store's purge from a cursor against real servers, one and a cluster: a purge of
//! many batches scans the keyspace once, not once per batch, and a key carried in the cursor
//! that was reserved again before it was judged is kept.

use idem_core::{
    store::{Record, Store},
    Key,
};
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::target::{parse_commandstats, RedisClusterTarget, RedisTarget};
use idem_tests::inventory::{self, complete, key, now, purge_to_the_end, reserve, HOUR, SECOND};

/// Expired records, and live ones, each purge test writes.
const EXPIRED: usize = 300;
const LIVE: usize = 30;
/// The purge's batch: many batches for [`EXPIRED`] records.
const BATCH: u32 = 10;

/// Writes [`EXPIRED`] records expired at [`now`] and [`LIVE`] that count an hour more;
/// returns both sets of keys.
async fn expired_and_live(store: &RedisStore) -> (Vec<Key>, Vec<Key>) {
    let expired: Vec<Key> = (0..EXPIRED)
        .map(|i| key("purge", &["expired", &i.to_string()]))
        .collect();
    let live: Vec<Key> = (0..LIVE)
        .map(|i| key("purge", &["live", &i.to_string()]))
        .collect();
    for key in &expired {
        complete(store, key, now() - HOUR, now() - SECOND).await;
    }
    for key in &live {
        complete(store, key, now(), now() + HOUR).await;
    }
    (expired, live)
}

/// Every expired key is gone, every live one is there.
async fn only_the_live_are_left(store: &RedisStore, expired: &[Key], live: &[Key]) {
    for key in expired {
        assert_eq!(store.get(key).await.unwrap(), None, "`{key}` is purged");
    }
    for key in live {
        assert!(store.get(key).await.unwrap().is_some(), "`{key}` is kept");
    }
}

/// The `SCAN` commands a server ran, from its `INFO commandstats`.
fn scans(info: &str) -> u64 {
    parse_commandstats(info)
        .into_iter()
        .find_map(|(name, calls)| (name == "scan").then_some(calls))
        .unwrap_or(0)
}

/// The `SCAN` commands the server ran since its statistics were last reset.
async fn scans_on(target: &RedisTarget) -> u64 {
    target
        .command_calls()
        .await
        .into_iter()
        .find_map(|(name, calls)| (name == "scan").then_some(calls))
        .unwrap_or(0)
}

async fn a_purge_of_many_batches_scans_the_keyspace_once() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = target.redis_store();
    let (expired, live) = expired_and_live(store).await;
    target.reset_command_stats().await;

    let (calls, deleted) = purge_to_the_end(inventory::of(store), BATCH).await;
    let scans = scans_on(&target).await;

    assert_eq!(deleted, EXPIRED as u64);
    only_the_live_are_left(store, &expired, &live).await;
    assert!(
        calls >= EXPIRED / BATCH as usize,
        "{calls} calls for {EXPIRED} records, {BATCH} a batch"
    );
    // 330 keys: one `SCAN` of `COUNT` 1000 covers them; a second for a table being rehashed.
    assert!(
        scans <= 2,
        "{scans} SCANs for one pass over {} keys in {calls} calls: the purge scanned again \
         batch after batch",
        EXPIRED + LIVE
    );
}

async fn a_purge_of_many_batches_scans_each_primary_once() {
    let Some(target) = RedisClusterTarget::start(3).await else {
        return;
    };
    let store = target.redis_store();
    let (expired, live) = expired_and_live(store).await;
    let nodes = target.cluster().ports().len();
    let info = |node: usize| {
        target
            .cluster()
            .cli_on(node, &["INFO", "commandstats"])
            .expect("INFO works")
    };
    let before: Vec<u64> = (0..nodes).map(|node| scans(&info(node))).collect();

    let (calls, deleted) = purge_to_the_end(inventory::of(store), BATCH).await;

    assert_eq!(deleted, EXPIRED as u64);
    only_the_live_are_left(store, &expired, &live).await;
    assert!(calls >= EXPIRED / BATCH as usize, "{calls} calls");
    for (node, before) in before.into_iter().enumerate() {
        let scanned = scans(&info(node)) - before;
        assert!(
            (1..=2).contains(&scanned),
            "node {node} ran {scanned} SCANs in {calls} calls: one pass takes one or two"
        );
    }
}

async fn a_key_carried_in_the_cursor_and_reserved_again_is_kept() {
    let Some(target) = RedisTarget::on_owned().await else {
        return;
    };
    let store = target.redis_store();
    let expired: Vec<Key> = (0..20).map(|i| key("again", &[&i.to_string()])).collect();
    for key in &expired {
        complete(store, key, now() - HOUR, now() - SECOND).await;
    }

    // The first call scans every key and judges one: the rest ride in its cursor.
    let first = inventory::of(store)
        .purge_expired_from(now(), 1, None)
        .await
        .unwrap();
    assert_eq!(first.deleted, 1);
    let mut cursor = first.cursor.expect("more to judge");
    let mut carried = None;
    for key in &expired {
        if store.get(key).await.unwrap().is_some() {
            carried = Some(key.clone());
        }
    }
    let again = carried.expect("a key left for the next calls");
    reserve(store, &again, now() + HOUR, now()).await;
    target.reset_command_stats().await;

    let mut deleted = first.deleted;
    loop {
        let progress = inventory::of(store)
            .purge_expired_from(now(), 1, Some(&cursor))
            .await
            .unwrap();
        deleted += progress.deleted;
        match progress.cursor {
            Some(next) => cursor = next,
            None => break,
        }
    }

    assert_eq!(deleted, expired.len() as u64 - 1);
    let record = store.get(&again).await.unwrap();
    assert!(
        matches!(&record, Some(Record::InProgress(held)) if held.lease_until() == now() + HOUR),
        "the new reservation is kept: {record:?}"
    );
    for key in expired.iter().filter(|key| **key != again) {
        assert_eq!(store.get(key).await.unwrap(), None, "`{key}` is purged");
    }
    assert_eq!(
        scans_on(&target).await,
        0,
        "the keys the first call carried are judged without scanning again"
    );
}

idem_tests::module_tests! {
    async a_purge_of_many_batches_scans_the_keyspace_once,
    async a_purge_of_many_batches_scans_each_primary_once,
    async a_key_carried_in_the_cursor_and_reserved_again_is_kept,
}
