//! The table of reserve cases on DynamoDB (moto): the store's reservation is a `PutItem`
//! conditioned on a free key, then, for the item that failed the condition, idem-core's
//! judgement and a takeover conditioned on the exact record read; every case, planted through
//! the store and then reserved, checks those conditions against the table.

use std::sync::Arc;

use idem_conformance::check_reserve_cases;
use idem_test_servers::dynamodb::TestDynamo;

async fn the_conditional_writes_decide_every_reserve_case() {
    let Some(db) = TestDynamo::start().await else {
        return;
    };
    check_reserve_cases(Arc::clone(&db.store) as Arc<dyn idem_core::store::Store>).await;
}

idem_tests::module_tests! {
    async the_conditional_writes_decide_every_reserve_case,
}
