//! Many callers of one key, through two independent stores (two service instances): the body
//! runs exactly once.

use idem_core::Idempotency;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::crowd;

const CALLERS: usize = 1_000;

async fn a_thousand_callers_on_two_stores_run_the_body_once() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let instances = [
        Idempotency::new(target.redis_store().clone()),
        Idempotency::new(target.another_store().await),
    ];
    crowd::in_flight(instances, CALLERS).await.finish().await;
}

idem_tests::module_tests! {
    async a_thousand_callers_on_two_stores_run_the_body_once,
}
