//! The store conformance suite, unchanged, against Redis with sealing and key digests on.

use idem_conformance::Sealed;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::sealed::sealed;

async fn target() -> Option<Sealed<RedisTarget>> {
    Some(sealed(RedisTarget::start().await?))
}

idem_tests::conformance_module!(target);
