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
}
