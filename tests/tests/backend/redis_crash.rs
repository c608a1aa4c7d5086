//! A checkout killed with SIGKILL between its two steps resumes on Redis: see
//! `idem_tests::crash`.

use std::process::Command;
use std::sync::Arc;

use idem_test_servers::redis::server::TestRedis;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::crash::{resumes_after_a_kill, unique_order, Effects};

async fn a_killed_checkout_resumes_after_its_recorded_step() {
    let Some(redis) = TestRedis::start() else {
        return;
    };
    let url = redis.url().to_owned();
    let target = RedisTarget::on(redis).await;
    let (order, effects) = (unique_order(), Effects::new());
    let mut child = Command::new(env!("CARGO_BIN_EXE_checkout_child"));
    child
        .args(["redis", &url, target.prefix(), &order])
        .arg(effects.dir());
    resumes_after_a_kill(
        Arc::new(target.another_store().await),
        &order,
        &effects,
        child,
    )
    .await;
}

idem_tests::module_tests! {
    async a_killed_checkout_resumes_after_its_recorded_step,
}
