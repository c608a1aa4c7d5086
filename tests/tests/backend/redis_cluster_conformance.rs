//! The store conformance suite, unchanged, against a Redis Cluster (one node holding every slot: cluster mode, cluster client; `redis_cluster.rs` spreads keys over three nodes).

use idem_test_servers::redis::target::RedisClusterTarget;

async fn target() -> Option<RedisClusterTarget> {
    RedisClusterTarget::start(1).await
}

idem_tests::conformance_module!(target);
