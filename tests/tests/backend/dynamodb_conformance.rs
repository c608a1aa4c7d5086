//! The store conformance suite, unchanged, against the DynamoDB store on moto_server (or
//! `IDEM_DYNAMODB_ENDPOINT`), a fresh table per check.

use idem_test_servers::dynamodb::TestDynamo;

async fn target() -> Option<TestDynamo> {
    TestDynamo::start().await
}

idem_tests::conformance_module!(target);
