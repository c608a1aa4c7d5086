//! A checkout killed with SIGKILL between its two steps resumes on DynamoDB: see
//! `idem_tests::crash`.

use std::process::Command;

use idem_test_servers::dynamodb::TestDynamo;
use idem_tests::crash::{resumes_after_a_kill, unique_order, Effects};

async fn a_killed_checkout_resumes_after_its_recorded_step() {
    let Some(dynamo) = TestDynamo::start().await else {
        return;
    };
    let (order, effects) = (unique_order(), Effects::new());
    let mut child = Command::new(env!("CARGO_BIN_EXE_checkout_child"));
    child
        .args(["dynamodb", dynamo.moto.endpoint(), dynamo.table(), &order])
        .arg(effects.dir());
    resumes_after_a_kill(dynamo.store.clone(), &order, &effects, child).await;
}

idem_tests::module_tests! {
    async a_killed_checkout_resumes_after_its_recorded_step,
}
