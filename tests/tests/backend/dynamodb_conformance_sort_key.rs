//! The store conformance suite, unchanged, against the DynamoDB store on a single-table design
//! (Powertools' layout: one partition key value, the idempotency key in the sort key) on
//! moto_server (or `IDEM_DYNAMODB_ENDPOINT`), a fresh table per check.

use idem_stores::dynamodb::SortKey;
use idem_test_servers::dynamodb::TestDynamo;

async fn target() -> Option<TestDynamo> {
    TestDynamo::with_sort_key(SortKey::holding_key("sk", "idempotency#conformance")).await
}

idem_tests::conformance_module!(target);
