//! The PostgreSQL store's own surface: migrations on any table and schema name, key prefixes,
//! and purging rows that stopped counting.

use std::time::Duration;

use idem_core::{
    Claim, Completed, Fingerprint, InProgress, Key, Outcome, OwnerToken, Reservation, Store,
    Timestamp, LEASE_GRACE,
};
use idem_stores::postgres::PostgresStore;
use idem_tests::postgres::TestPg;

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
    let done = Completed::new(Fingerprint::empty(), Outcome::Ok(b"1".to_vec()), expires_at);
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
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
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

idem_tests::backend_tests! {
    async purge_deletes_expired_and_abandoned_rows_in_batches,
    async any_table_and_schema_name_is_quoted,
}
