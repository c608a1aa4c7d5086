//! The store conformance suite, unchanged, against Redis with `read_before_reserve`: a replay
//! answered from a plain read must keep every guarantee the reserve script keeps.

use idem_tests::redis::server::TestRedis;
use idem_tests::redis::target::RedisTarget;

async fn target() -> Option<RedisTarget> {
    Some(RedisTarget::reading_before_reserve(TestRedis::start()?).await)
}

idem_conformance::conformance_tests!(target);
