//! `idem` on PostgreSQL: records written through a handle on a store with a key prefix, then
//! read, listed, released, forgotten and purged by the binary.

use std::sync::Arc;

use idem_conformance::Target;
use idem_stores::postgres::PostgresStore;
use idem_test_servers::postgres::TestPg;

use crate::support::{self, Subject};

/// A store with a key prefix on a fresh database's migrated table, and `idem --store
/// postgres://... --table --schema --prefix`.
async fn start() -> Option<Subject> {
    let pg = TestPg::start().await?;
    let store = PostgresStore::builder(pg.pool.clone())
        .prefix("billing")
        .build();
    let cli = support::idem().store([
        "--store",
        pg.url.as_str(),
        "--table",
        "idem_records",
        "--schema",
        "public",
        "--prefix",
        "billing",
    ]);
    Some(Subject::new(Arc::new(store), cli, pg))
}

/// A row the store can't read, on the default table without a prefix.
async fn corrupt_record_is_reported_and_forgotten() {
    let Some(pg) = TestPg::start().await else {
        return;
    };
    let subject = Subject::new(
        pg.store(),
        support::idem().store(["--store", pg.url.as_str()]),
        (),
    );
    let key = support::records::key(&subject.idem, "charge", "order-9");
    assert!(pg.corrupt(&key).await);
    support::scenarios::corrupt_record_is_reported_and_forgotten(&subject, &key).await;
}

/// Two prefixes on one table: a purge under one leaves the other's rows.
async fn purge_stays_inside_its_prefix() {
    let Some(pg) = TestPg::start().await else {
        return;
    };
    let subject = |prefix: &str| {
        let store = PostgresStore::builder(pg.pool.clone())
            .prefix(prefix)
            .build();
        let cli = support::idem().store(["--store", pg.url.as_str(), "--prefix", prefix]);
        Subject::new(Arc::new(store), cli, ())
    };
    let (a, b) = (subject("svc_a"), subject("svc_b"));
    support::scenarios::purge_stays_inside_its_prefix(&a, &b).await;
}

/// Rows under the store's prefix that hold no idempotency key after it, written with SQL: one
/// of 2000 bytes. A key that is not UTF-8 can't be written: the database refuses it.
async fn keys_that_are_no_keys_are_listed_and_counted() {
    let Some(pg) = TestPg::start().await else {
        return;
    };
    let store = PostgresStore::builder(pg.pool.clone())
        .prefix("billing")
        .build();
    let stored = |key: &str| format!("billing|{key}");
    assert_eq!(
        store.row_key(&idem_core::Key::parse("idem|f|-|1").expect("a key")),
        stored("idem|f|-|1")
    );
    let long = format!("idem|charge|-|{}", "a".repeat(2000));
    let insert = "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
                  VALUES ($1, 'completed', 'someone', 'x', 0)";
    sqlx::query(insert)
        .bind(stored(&long))
        .execute(&pg.pool)
        .await
        .expect("a raw insert succeeds");
    let not_utf8 = sqlx::query(
        "INSERT INTO idem_records (key, state, owner, fingerprint, live_until_ms) \
         VALUES (convert_from('\\x62696c6c696e677cff'::bytea, 'UTF8'), 'completed', 'x', 'x', 0)",
    )
    .execute(&pg.pool)
    .await;
    assert!(
        not_utf8.is_err(),
        "UTF-8 databases refuse such keys: {not_utf8:?}"
    );
    let cli = support::idem().store(["--store", pg.url.as_str(), "--prefix", "billing"]);
    let subject = Subject::new(Arc::new(store), cli, ());
    support::scenarios::unkeyed_entries_are_listed_and_counted(
        &subject,
        &[(long.clone().into_bytes(), long)],
    )
    .await;
}

support::scenarios::store_tests!(
    postgres: start,
    corrupt_record_is_reported_and_forgotten,
    purge_stays_inside_its_prefix,
    keys_that_are_no_keys_are_listed_and_counted,
);
