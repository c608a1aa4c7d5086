//! The store conformance suite, unchanged, against Redis with sealing and key digests on.

use idem_test_servers::redis::target::RedisTarget;
use idem_tests::sealed::Sealed;

async fn target() -> Option<Sealed<RedisTarget>> {
    Some(Sealed::new(RedisTarget::start().await?))
}

idem_tests::conformance_module!(target);
