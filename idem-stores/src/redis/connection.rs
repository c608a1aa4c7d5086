//! The connection a store sends its requests on: one server, or a Redis Cluster.

use redis::aio::ConnectionManager;
use redis::{Cmd, RedisResult, Value};

/// A multiplexed connection that reconnects by itself.
#[derive(Clone)]
pub(crate) enum Connection {
    /// One server (or a proxy in front of several).
    Single(ConnectionManager),
    /// A Redis Cluster: each request goes to the node that owns its key's slot.
    #[cfg(feature = "redis-cluster")]
    Cluster(super::cluster::Cluster),
}

impl Connection {
    /// Sends one command and reads its reply.
    pub(crate) async fn query(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Connection::Single(conn) => cmd.query_async(conn).await,
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(cluster) => cluster.query(cmd).await,
        }
    }

    /// The same connection, pinned: on a cluster, it keeps using the connection in use now
    /// even if the store replaces it, so that a `WAIT` follows its write.
    pub(crate) fn pinned(&self) -> Connection {
        match self {
            Connection::Single(conn) => Connection::Single(conn.clone()),
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(cluster) => Connection::Cluster(cluster.pinned()),
        }
    }

    /// Sends a `WAIT` to the server that holds `key`: on a cluster, the primary that owns its
    /// slot, rather than every primary as a keyless command would go.
    #[cfg_attr(not(feature = "redis-cluster"), allow(unused_variables))]
    pub(crate) async fn wait_on_primary_of(&mut self, cmd: &Cmd, key: &str) -> RedisResult<Value> {
        match self {
            Connection::Single(conn) => cmd.query_async(conn).await,
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(cluster) => cluster.wait_on_primary_of(cmd, key).await,
        }
    }

    /// Sends a keyless command (`SCAN`) to one node: on a cluster, the primary that owns
    /// `slot`, or any node for `None` (`CLUSTER SLOTS`); on one server, the server.
    #[cfg_attr(not(feature = "redis-cluster"), allow(unused_variables))]
    pub(crate) async fn query_node(&mut self, cmd: &Cmd, slot: Option<u16>) -> RedisResult<Value> {
        match self {
            Connection::Single(conn) => cmd.query_async(conn).await,
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(cluster) => cluster.query_node(cmd, slot).await,
        }
    }

    /// Whether the connection is to a Redis Cluster, whose keys are spread over its primaries.
    pub(crate) fn is_cluster(&self) -> bool {
        match self {
            Connection::Single(_) => false,
            #[cfg(feature = "redis-cluster")]
            Connection::Cluster(_) => true,
        }
    }
}
