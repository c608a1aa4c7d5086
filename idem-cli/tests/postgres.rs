//! `idem` on PostgreSQL: records written through a handle on a store with a key prefix, then
//! read, listed, released, forgotten and purged by the binary.

mod support;

use std::sync::Arc;

use idem_conformance::Target;
use idem_stores::postgres::PostgresStore;
use idem_tests::postgres::TestPg;
use support::{Cli, Subject};

/// A store with a key prefix on a fresh database's migrated table, and `idem --store
/// postgres://... --table --schema --prefix`.
async fn start() -> Option<Subject> {
    let pg = TestPg::start().await?;
    let store = PostgresStore::builder(pg.pool.clone())
        .prefix("billing")
        .build();
    let cli = Cli::new([
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
    let subject = Subject::new(pg.store(), Cli::new(["--store", pg.url.as_str()]), ());
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
        let store = PostgresStore::builder(pg.pool.clone()).prefix(prefix).build();
        let cli = Cli::new(["--store", pg.url.as_str(), "--prefix", prefix]);
        Subject::new(Arc::new(store), cli, ())
    };
    let (a, b) = (subject("svc_a"), subject("svc_b"));
    support::scenarios::purge_stays_inside_its_prefix(&a, &b).await;
}

support::scenarios::store_tests!(
    start,
    corrupt_record_is_reported_and_forgotten,
    purge_stays_inside_its_prefix,
);
