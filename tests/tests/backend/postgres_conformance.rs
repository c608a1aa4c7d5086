//! The store conformance suite, unchanged, against the PostgreSQL store on a cluster of its
//! own (or `IDEM_POSTGRES_URL`), on a fresh database.

use idem_test_servers::postgres::TestPg;

async fn target() -> Option<TestPg> {
    TestPg::start().await
}

idem_tests::conformance_module!(target);
