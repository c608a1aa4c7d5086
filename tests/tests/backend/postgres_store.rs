//! The PostgreSQL store's own surface: migrations on any table and schema name, by many
//! processes at once, key prefixes, and purging rows that stopped counting.

use std::time::Duration;

use idem_core::{
    store::{
        Claim, Completed, InProgress, Outcome, OwnerToken, Reservation, Store, Timestamp,
        LEASE_GRACE,
    },
    Fingerprint, Key, StoreError,
};
use idem_stores::postgres::PostgresStore;
use idem_test_servers::postgres::TestPg;

fn key(name: &str) -> Key {
    idem_core::Idempotency::new(idem_stores::memory::MemoryStore::new())
        .key("purge")
        .part(name)
        .finish()
        .unwrap()
}

async fn reserve(store: &PostgresStore, name: &str, lease_until: Timestamp, now: Timestamp) {
    let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), lease_until);
    let reserved = store
        .reserve(&key(name), &Claim::new(record, now))
        .await
        .unwrap();
    assert!(matches!(reserved, Reservation::Reserved(_)), "{reserved:?}");
}

async fn complete(store: &PostgresStore, name: &str, expires_at: Timestamp, now: Timestamp) {
    let owner = OwnerToken::generate();
    let record = InProgress::new(
        owner.clone(),
        Fingerprint::empty(),
        now + Duration::from_secs(30),
    );
    store
        .reserve(&key(name), &Claim::new(record, now))
        .await
        .unwrap();
    let done = Completed::new(Fingerprint::empty(), Outcome::ok(b"1".to_vec()), expires_at);
    store.complete(&key(name), &owner, &done).await.unwrap();
}

async fn purge_deletes_expired_and_abandoned_rows_in_batches() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = &target.store;
    let now = Timestamp::from_millis(1_800_000_000_000);
    let second = Duration::from_secs(1);
    for n in 0..5 {
        complete(
            store,
            &format!("expired-{n}"),
            now - second,
            now - second * 10,
        )
        .await;
    }
    complete(store, "live", now + second, now).await;
    // Lease passed, but within the grace: kept. Lease passed more than a grace ago: deleted.
    reserve(store, "in-grace", now - second, now - second * 40).await;
    reserve(
        store,
        "abandoned",
        now - LEASE_GRACE - second,
        now - LEASE_GRACE * 2,
    )
    .await;

    assert_eq!(
        store.purge_expired(now, 4).await.unwrap(),
        4,
        "one full batch"
    );
    assert_eq!(store.purge_expired(now, 4).await.unwrap(), 2, "the rest");
    assert_eq!(store.purge_expired(now, 4).await.unwrap(), 0);
    for name in ["live", "in-grace"] {
        assert!(
            store.get(&key(name)).await.unwrap().is_some(),
            "{name} is kept"
        );
    }
    for name in ["expired-0", "abandoned"] {
        assert!(
            store.get(&key(name)).await.unwrap().is_none(),
            "{name} is gone"
        );
    }
}

async fn any_table_and_schema_name_is_quoted() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    target
        .execute_raw("CREATE SCHEMA \"odd \"\"schema\"\"\"")
        .await;
    let build = || {
        PostgresStore::builder(target.pool.clone())
            .schema("odd \"schema\"")
            .table("idem; DROP TABLE idem_records; --")
            .prefix("billing")
            .build()
    };
    let store = build();
    assert_eq!((store.name(), store.prefix()), ("postgres", "billing"));
    let debug = format!("{store:?}");
    assert!(
        debug.contains(&format!("{:?}", store.table())) && debug.contains("billing"),
        "{debug}"
    );
    store.migrate().await.unwrap();
    assert_eq!(
        store.round_trips(),
        7,
        "a new table: look in the catalog, then begin, lock, look again, create the table \
         (with its step columns, which are not added again), its index, commit"
    );
    let before = store.round_trips();
    store.migrate().await.unwrap();
    assert_eq!(
        store.round_trips() - before,
        1,
        "a migrated table is found by one read of the catalog"
    );
    let now = Timestamp::from_millis(1_800_000_000_000);
    reserve(&store, "o-1", now + Duration::from_secs(30), now).await;
    assert!(store.get(&key("o-1")).await.unwrap().is_some());
    assert!(
        target.store.get(&key("o-1")).await.unwrap().is_none(),
        "the default table is untouched and holds nothing"
    );
    let prefixed: String = sqlx::query_scalar(&format!("SELECT key FROM {}", store.table()))
        .fetch_one(&target.pool)
        .await
        .unwrap();
    assert_eq!(prefixed, store.row_key(&key("o-1")));
    assert!(prefixed.starts_with("billing"), "{prefixed}");
}

/// A reserve whose answer was lost is sent again with the same claim: it finds the row its
/// first attempt wrote and is told it holds the key, not that someone else does.
async fn a_reservation_sent_again_finds_its_own_row() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let now = Timestamp::from_millis(1_800_000_000_000);
    let record = InProgress::new(
        OwnerToken::generate(),
        Fingerprint::empty(),
        now + Duration::from_secs(30),
    );
    let claim = Claim::new(record.clone(), now);
    let store = &target.store;
    for attempt in ["first", "again"] {
        assert_eq!(
            store.reserve(&key("o-1"), &claim).await.unwrap(),
            Reservation::Reserved(record.clone()),
            "{attempt}"
        );
    }
    let other = Claim::new(
        InProgress::new(
            OwnerToken::generate(),
            Fingerprint::empty(),
            now + Duration::from_secs(30),
        ),
        now,
    );
    assert_eq!(
        store.reserve(&key("o-1"), &other).await.unwrap(),
        Reservation::Existing(idem_core::store::Record::InProgress(record)),
        "another owner finds it held"
    );
}

/// A table that lost its index gets it back, and nothing else is sent: the table and its
/// columns are there, and `ALTER TABLE` would lock out every call even with nothing to add.
async fn migrating_a_table_without_its_index_creates_only_the_index() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = PostgresStore::builder(target.pool.clone())
        .table("unindexed")
        .build();
    store.migrate().await.unwrap();
    target
        .execute_raw("DROP INDEX unindexed_live_until_idx")
        .await;

    let before = store.round_trips();
    store.migrate().await.unwrap();
    assert_eq!(
        store.round_trips() - before,
        6,
        "look in the catalog, then begin, lock, look again, create the index, commit"
    );
    assert!(
        target
            .holds("SELECT to_regclass('unindexed_live_until_idx') IS NOT NULL")
            .await,
        "the index is back"
    );
}

/// Replicas starting together against a fresh database each call `migrate`: all succeed
/// (`CREATE TABLE IF NOT EXISTS` alone fails one of them with a unique violation).
async fn processes_migrating_at_once_all_succeed() {
    const PROCESSES: usize = 8;
    let Some(target) = TestPg::start().await else {
        return;
    };
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(PROCESSES));
    let mut migrations = Vec::new();
    for _ in 0..PROCESSES {
        let pool = TestPg::pool_options()
            .max_connections(2)
            .connect(&target.url)
            .await
            .unwrap();
        let store = PostgresStore::builder(pool).table("fresh_records").build();
        let start = start.clone();
        migrations.push(tokio::spawn(async move {
            start.wait().await;
            store.migrate().await.map(|()| store)
        }));
    }
    let mut stores = Vec::new();
    for migration in migrations {
        match migration.await.unwrap() {
            Ok(store) => stores.push(store),
            Err(error) => panic!("a migration failed: {error:?}"),
        }
    }
    let now = Timestamp::from_millis(1_800_000_000_000);
    reserve(&stores[0], "o-1", now + Duration::from_secs(30), now).await;
    assert!(stores[PROCESSES - 1]
        .get(&key("o-1"))
        .await
        .unwrap()
        .is_some());
}

/// `migrate` at the start-up of a replica while others run calls: with the table in place it
/// takes no lock on it, so it neither waits for an open transaction that wrote to the table
/// nor queues every later writer behind itself (`CREATE INDEX IF NOT EXISTS` would).
async fn migrating_a_migrated_table_waits_for_no_one() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let mut writer = target.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
         VALUES ('running', 'in_progress', 'someone', '', 0)",
    )
    .execute(&mut *writer)
    .await
    .unwrap();
    let waiting_for_the_table = async {
        target
            .wait_until(
                "a session to wait for a lock on the table",
                "SELECT count(*) > 0 FROM pg_locks WHERE relation = 'idem_records'::regclass \
                 AND NOT granted",
            )
            .await
    };
    tokio::select! {
        migrated = target.store.migrate() => migrated.unwrap(),
        () = waiting_for_the_table => panic!("migrate waited for the open transaction"),
    }
    writer.rollback().await.unwrap();
}

/// PostgreSQL cuts names to 63 bytes: two tables named alike up to there would be one table,
/// and the index of a table of 63 bytes, cut, would be named as the table itself, so that
/// `CREATE INDEX IF NOT EXISTS` skipped it.
async fn names_over_63_bytes_are_refused_and_long_tables_get_an_index_each() {
    let Some(target) = TestPg::start().await else {
        return;
    };
    let store = |table: &str| {
        PostgresStore::builder(target.pool.clone())
            .table(table)
            .build()
    };
    let base = "t".repeat(63);
    let too_long = store(&format!("{base}_service_a"));
    let refused = too_long.migrate().await.unwrap_err();
    assert!(matches!(refused, StoreError::Rejected(_)), "{refused:?}");
    assert!(refused.to_string().contains("63 bytes"), "{refused}");
    let now = Timestamp::from_millis(1_800_000_000_000);
    let record = InProgress::new(OwnerToken::generate(), Fingerprint::empty(), now);
    let call = too_long
        .reserve(&key("o-1"), &Claim::new(record, now))
        .await;
    assert!(matches!(call, Err(StoreError::Rejected(_))), "{call:?}");
    assert!(
        !target
            .holds(&format!("SELECT to_regclass('\"{base}\"') IS NOT NULL"))
            .await,
        "nothing was created under the cut name"
    );

    let long = |service: &str| format!("{}_{service}", "t".repeat(59));
    for service in ["one", "two"] {
        let store = store(&long(service));
        store.migrate().await.unwrap();
        reserve(&store, "o-1", now + Duration::from_secs(30), now).await;
    }
    let indexes = format!(
        "SELECT (SELECT count(*) FROM pg_indexes WHERE tablename IN ('{}', '{}') \
         AND indexdef LIKE '%live_until_ms%') = 2",
        long("one"),
        long("two")
    );
    assert!(
        target.holds(&indexes).await,
        "each 63-byte table has its index"
    );
}

idem_tests::module_tests! {
    async names_over_63_bytes_are_refused_and_long_tables_get_an_index_each,
    async purge_deletes_expired_and_abandoned_rows_in_batches,
    async any_table_and_schema_name_is_quoted,
    async migrating_a_table_without_its_index_creates_only_the_index,
    async a_reservation_sent_again_finds_its_own_row,
    async processes_migrating_at_once_all_succeed,
    async migrating_a_migrated_table_waits_for_no_one,
}
