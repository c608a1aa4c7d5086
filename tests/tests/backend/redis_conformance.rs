//! The store conformance suite, unchanged, against Redis.

use idem_test_servers::redis::target::RedisTarget;

async fn target() -> Option<RedisTarget> {
    RedisTarget::start().await
}

idem_tests::conformance_module!(target);
