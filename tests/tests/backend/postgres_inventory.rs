//! The PostgreSQL store's inventory against a real server: listing by prefix in key order,
//! paging, keys that parse back, corrupt and foreign rows, a collation that does not sort
//! bytes, purging, and the operator's calls on a handle.

use idem_conformance::Target as _;
use idem_core::store::{Inventory, ListPage, ListQuery};
use idem_core::{store::Record, Key, StoreError};
use idem_stores::postgres::PostgresStore;
use idem_test_servers::postgres::server::TestPostgres;
use idem_test_servers::postgres::TestPg;
use idem_tests::inventory::{self, complete, key, listed, now, purge_to_the_end, set, HOUR};
use idem_tests::inventory_cases;

/// Every page of the listing of `prefix`, `limit` records a page.
async fn pages(inventory: &dyn Inventory, prefix: &str, limit: u32) -> Vec<ListPage> {
    let mut pages = Vec::new();
    let mut query = ListQuery::new(prefix, limit);
    for _ in 0..1000 {
        let page = inventory.list(&query).await.unwrap();
        assert!(page.records.len() <= limit as usize, "{page:?}");
        let cursor = page.cursor.clone();
        pages.push(page);
        match cursor {
            Some(cursor) => query = query.after(Some(cursor)),
            None => return pages,
        }
    }
    panic!("the listing of `{prefix}` did not end");
}

/// Another store on `db`'s table, under the prefix `prefix`.
fn other(db: &TestPg, prefix: &str) -> PostgresStore {
    PostgresStore::builder(db.pool.clone()).prefix(prefix).build()
}

async fn listing_finds_the_records_under_a_prefix_and_nothing_outside_it() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let (charges, found) =
        inventory_cases::charges_under_a_prefix(&*db.store, &other(&db, "other%|_")).await;
    let keys: Vec<&Key> = found.iter().map(|(key, _)| key).collect();
    assert_eq!(
        keys,
        charges.iter().collect::<Vec<_>>(),
        "the charges, in key order"
    );
    assert!(matches!(found[3].1, Ok(Record::InProgress(_))));
    let page = inventory::of(&*db.store)
        .list(&ListQuery::new(Key::function_prefix("idem", "charge"), 100))
        .await
        .unwrap();
    assert_eq!(page.cursor, None, "one page holds them all");
}

async fn pages_of_two_visit_each_of_five_keys_once_in_key_order() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let store = &*db.store;
    let written = inventory_cases::five_keys_to_page(store).await;

    let pages = pages(inventory::of(store), &Key::function_prefix("idem", "page"), 2).await;
    let sizes: Vec<usize> = pages.iter().map(|page| page.records.len()).collect();
    assert_eq!(
        sizes,
        [2, 2, 1],
        "full pages, then the rest, then no cursor"
    );
    let keys: Vec<Key> = pages
        .into_iter()
        .flat_map(|page| page.records.into_iter().map(|(key, _)| key))
        .collect();
    let mut sorted = written.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "each key once, in key order");
}

async fn keys_round_trip_and_prefixes_are_not_patterns() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    inventory_cases::keys_round_trip_and_prefixes_are_not_patterns(&*db.store).await;
}

async fn a_corrupt_row_is_listed_as_an_error_and_a_foreign_row_as_unkeyed() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let store = &*db.store;
    let corrupt = inventory_cases::two_records_around(store).await;
    assert!(db.corrupt(&corrupt).await);
    // Rows under the store's prefix that hold no idempotency key (no `|` after it; too long):
    // not records, but listed all the same.
    db.execute_raw(
        "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
         VALUES ('|idem', 'completed', 'someone', 'x', 0)",
    )
    .await;
    let long = format!("idem|mixed|-|{}", "z".repeat(2000));
    db.execute_raw(&format!(
        "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
         VALUES ('|{long}', 'completed', 'someone', 'x', 0)"
    ))
    .await;

    for limit in [1, 100] {
        let mut entries = Vec::new();
        let mut unkeyed = Vec::new();
        for page in pages(inventory::of(store), "", limit).await {
            entries.extend(page.records);
            unkeyed.extend(page.unkeyed);
        }
        let unkeyed: Vec<&[u8]> = unkeyed.iter().map(|entry| &entry.key[..]).collect();
        assert_eq!(unkeyed, [&b"idem"[..], long.as_bytes()]);
        let keys: Vec<&Key> = entries.iter().map(|(key, _)| key).collect();
        assert_eq!(
            keys,
            [&key("mixed", &["a"]), &corrupt, &key("mixed", &["c"])]
        );
        assert!(
            matches!(&entries[1].1, Err(StoreError::Corrupt(_))),
            "{:?}",
            entries[1].1
        );
        assert!(entries[0].1.is_ok() && entries[2].1.is_ok());
    }
}

async fn a_collation_that_does_not_sort_bytes_still_lists_every_key() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let icu = "SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')";
    if !db.holds(icu).await {
        eprintln!("this PostgreSQL has no ICU collations: nothing to check");
        return;
    }
    let store = PostgresStore::builder(db.pool.clone())
        .table("icu_records")
        .build();
    store.migrate().await.unwrap();
    db.execute_raw(r#"ALTER TABLE icu_records ALTER COLUMN key TYPE text COLLATE "und-x-icu""#)
        .await;
    // Under ICU, `[` (the character after `Z`) sorts before letters and `a` before `B`: a
    // range of the index from `…|Z` to `…|[` would be empty, and pages in byte order would
    // skip or repeat keys.
    let written: Vec<Key> = ["Zed", "Zoe", "apple", "Banana", "cherry", "[x]", "Z"]
        .into_iter()
        .map(|part| key("icu", &[part]))
        .collect();
    for key in &written {
        complete(&store, key, now(), now() + HOUR).await;
    }
    let all = listed(inventory::of(&store), &Key::function_prefix("idem", "icu"), 2).await;
    assert_eq!(all.len(), written.len(), "each key once: {all:?}");
    assert_eq!(set(&all), set(&written));
    let zeds = listed(
        inventory::of(&store),
        &format!("{}-|Z", Key::function_prefix("idem", "icu")),
        1,
    )
    .await;
    assert_eq!(
        set(&zeds),
        set(&[
            key("icu", &["Zed"]),
            key("icu", &["Zoe"]),
            key("icu", &["Z"])
        ])
    );
}

async fn a_purge_deletes_what_stopped_counting_and_keeps_the_rest() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let other = other(&db, "other");
    inventory_cases::a_purge_deletes_what_stopped_counting_and_keeps_the_rest(&*db.store, &other)
        .await;
}

/// The rows of the table that scans read so far (`seq_tup_read` and `idx_tup_fetch`), once
/// the connection's pending statistics are flushed: the pool's one connection flushes them
/// before it answers `pg_stat_force_next_flush`.
async fn rows_read(db: &TestPg) -> i64 {
    sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query_scalar::<_, i64>(
        "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) \
         FROM pg_stat_user_tables WHERE relid = 'idem_records'::regclass",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap()
}

async fn a_purge_of_many_batches_reads_each_row_once() {
    const EXPIRED: usize = 2000;
    const LIVE: usize = 2000;
    const BATCH: u32 = 50;
    let Some(server) = TestPostgres::start() else {
        return;
    };
    // One connection: every statement's statistics are flushed by the one that reads them.
    let db = TestPg::on_with(server, TestPg::pool_options().max_connections(1)).await;
    let store = &*db.store;
    let row_keys = |kind: &str, count: usize| -> Vec<String> {
        (0..count)
            .map(|i| store.row_key(&key("purge", &[&format!("{kind}-{i:05}")])))
            .collect()
    };
    let insert = |keys: Vec<String>, live_until: i64| {
        sqlx::query(
            "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms, outcome) \
             SELECT k, 'completed', 'o', 'f', $2, 'ok' FROM unnest($1::text[]) AS k",
        )
        .bind(keys)
        .bind(live_until)
    };
    let now_ms = i64::try_from(inventory::NOW).unwrap();
    // The live rows first, so a scan in the table's order reads them before the expired.
    insert(row_keys("live", LIVE), now_ms + 3_600_000)
        .execute(&db.pool)
        .await
        .unwrap();
    insert(row_keys("expired", EXPIRED), now_ms - 1_000)
        .execute(&db.pool)
        .await
        .unwrap();
    db.execute_raw("ANALYZE idem_records").await;
    let before = rows_read(&db).await;

    let (calls, deleted) = purge_to_the_end(inventory::of(store), BATCH).await;
    let read = rows_read(&db).await - before;

    assert_eq!(deleted, EXPIRED as u64);
    assert!(calls >= EXPIRED / BATCH as usize, "{calls} calls");
    let left: Vec<String> = sqlx::query_scalar("SELECT key FROM idem_records ORDER BY key")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(left, row_keys("live", LIVE), "only the live rows are left");
    let rows = (EXPIRED + LIVE) as i64;
    assert!(
        read <= 2 * rows,
        "the purge read {read} rows in {calls} calls over a table of {rows}: it read them \
         again batch after batch"
    );
}

async fn the_handle_lists_inspects_releases_and_purges() {
    let Some(db) = TestPg::start().await else {
        return;
    };
    let listed = inventory::the_handle_lists_inspects_releases_and_purges(db.store.clone()).await;
    let op = |part: &str| key("op", &[part]);
    assert_eq!(listed, [op("done"), op("held"), op("old")], "in key order");
}

idem_tests::module_tests! {
    async listing_finds_the_records_under_a_prefix_and_nothing_outside_it,
    async pages_of_two_visit_each_of_five_keys_once_in_key_order,
    async keys_round_trip_and_prefixes_are_not_patterns,
    async a_corrupt_row_is_listed_as_an_error_and_a_foreign_row_as_unkeyed,
    async a_collation_that_does_not_sort_bytes_still_lists_every_key,
    async a_purge_deletes_what_stopped_counting_and_keeps_the_rest,
    async a_purge_of_many_batches_reads_each_row_once,
    async the_handle_lists_inspects_releases_and_purges,
}
