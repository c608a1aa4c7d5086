//! `RedisStoreBuilder`: where the store connects, and how.

use std::time::Duration;

use idem_core::StoreError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Client;

#[cfg(feature = "redis-cluster")]
use super::cluster::Cluster;
use super::connection::Connection;
use super::error::store_error;
use super::store::RedisStore;
use super::wait::Wakeups;

/// How long a connection attempt may take unless told otherwise.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a request may wait for its answer unless told otherwise.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds a [`RedisStore`]: where it connects, its key prefix, its timeouts and replication.
///
/// Start from [`RedisStore::builder`] (one server), `RedisStore::cluster_builder` (a Redis
/// Cluster, with the `redis-cluster` feature), or a connection you made yourself
/// ([`RedisStore::connection_builder`]).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use idem_stores::redis::RedisStore;
/// let store = RedisStore::builder(redis::Client::open("redis://127.0.0.1:6379")?)
///     .prefix("billing")
///     .response_timeout(Duration::from_secs(1))
///     .connect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RedisStoreBuilder {
    source: Source,
    prefix: String,
    connection_timeout: Duration,
    response_timeout: Duration,
    config: Option<ConnectionManagerConfig>,
    replicas: Option<(u32, Duration)>,
}

/// Where the store's connection comes from.
enum Source {
    // Boxed: a client built with TLS is several times the size of the other variants.
    Client(Box<Client>),
    Connection(ConnectionManager),
    #[cfg(feature = "redis-cluster")]
    ClusterNodes(Vec<String>),
    #[cfg(feature = "redis-cluster")]
    ClusterConnection(redis::cluster_async::ClusterConnection),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Client(client) => f.debug_tuple("Client").field(client).finish(),
            Source::Connection(_) => f.write_str("Connection"),
            #[cfg(feature = "redis-cluster")]
            Source::ClusterNodes(nodes) => f.debug_tuple("ClusterNodes").field(nodes).finish(),
            #[cfg(feature = "redis-cluster")]
            Source::ClusterConnection(_) => f.write_str("ClusterConnection"),
        }
    }
}

impl RedisStoreBuilder {
    fn new(source: Source) -> Self {
        RedisStoreBuilder {
            source,
            prefix: String::new(),
            connection_timeout: CONNECTION_TIMEOUT,
            response_timeout: RESPONSE_TIMEOUT,
            config: None,
            replicas: None,
        }
    }

    pub(crate) fn on_client(client: Client) -> Self {
        Self::new(Source::Client(Box::new(client)))
    }

    pub(crate) fn on_connection(conn: ConnectionManager) -> Self {
        Self::new(Source::Connection(conn))
    }

    #[cfg(feature = "redis-cluster")]
    pub(crate) fn on_cluster(nodes: Vec<String>) -> Self {
        Self::new(Source::ClusterNodes(nodes))
    }

    #[cfg(feature = "redis-cluster")]
    pub(crate) fn on_cluster_connection(conn: redis::cluster_async::ClusterConnection) -> Self {
        Self::new(Source::ClusterConnection(conn))
    }

    /// Puts `prefix` in front of every key (default: none; keys already start with the
    /// handle's namespace). On a Redis Cluster, a prefix with a hash tag (`"{billing}:"`) puts
    /// every record on one slot: see the [module docs](super) on hash tags before setting one.
    /// So does a prefix with a `{` it does not close: the `{}` after the prefix closes it.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long connecting may take before it fails (default 1 s). Not used on a connection
    /// you made yourself.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long a request may wait for its answer before the call fails closed (default 2 s).
    /// Not used on a connection you made yourself.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Replaces every setting of a one-server connection, timeouts included. The defaults fail
    /// a request after 2 s without an answer and give up reconnecting after about half a
    /// second, so that a call fails closed quickly while the server is down; the next request
    /// tries to reconnect again. Not used on a cluster or a connection you made yourself.
    pub fn connection_config(mut self, config: ConnectionManagerConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// After each reservation, recorded step and completion, waits up to `timeout` for `replicas`
    /// replicas to acknowledge it (`WAIT`), one round trip more each. With fewer, the request
    /// fails: a reservation fails closed (the function does not run, the key is released), a
    /// completion is retried and otherwise reported as not recorded.
    ///
    /// Redis replicates asynchronously: a primary that fails right after acknowledging a write
    /// may not have passed it on, and the promoted replica then has no reservation (a duplicate
    /// runs) or no outcome (a retry runs the function again). `WAIT` narrows that window to
    /// writes the replicas have not acknowledged; it does not make Redis strongly consistent
    /// (a failover may still pick a replica that missed the write).
    ///
    /// On a Redis Cluster, the `WAIT` goes to the primary that holds the key: only that
    /// shard's replicas count.
    ///
    /// The response timeout grows by `timeout`, so that `WAIT` answers how many replicas
    /// acknowledged rather than the request timing out first.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replicas = Some((replicas, timeout));
        self
    }

    /// Connects now; fails if the server cannot be reached, or says it is older than Redis
    /// 7.0 (the store reserves with `SET ... NX GET`). Warns through `tracing` when the
    /// server's `maxmemory-policy` is not `noeviction`.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        let (conn, wakeups) = match &self.source {
            Source::Client(client) => {
                let conn = ConnectionManager::new_with_config((**client).clone(), self.config())
                    .await
                    .map_err(|error| store_error(error, "connect"))?;
                (
                    Connection::Single(conn),
                    Some(Wakeups::new((**client).clone())),
                )
            }
            Source::Connection(conn) => (Connection::Single(conn.clone()), None),
            #[cfg(feature = "redis-cluster")]
            Source::ClusterNodes(nodes) => {
                let client = redis::cluster::ClusterClient::builder(nodes.iter().cloned())
                    .connection_timeout(self.connection_timeout)
                    .response_timeout(self.answer_within())
                    .build()
                    .map_err(|error| store_error(error, "cluster connect"))?;
                let conn = client
                    .get_async_connection()
                    .await
                    .map_err(|error| store_error(error, "cluster connect"))?;
                let conn = Cluster::new(conn, Some(client));
                // A publication reaches subscribers on every node of a cluster, so waiting
                // callers subscribe on the first node given.
                let wakeups = nodes
                    .first()
                    .and_then(|node| Client::open(node.as_str()).ok())
                    .map(Wakeups::new);
                (Connection::Cluster(conn), wakeups)
            }
            #[cfg(feature = "redis-cluster")]
            Source::ClusterConnection(conn) => {
                (Connection::Cluster(Cluster::new(conn.clone(), None)), None)
            }
        };
        let store = self.build(conn, wakeups);
        store.check_version().await?;
        store.warn_unless_noeviction().await;
        Ok(store)
    }

    /// Connects on the first request; must be called inside a Tokio runtime. A cluster is
    /// connected at once ([`connect`](RedisStoreBuilder::connect)): this fails for one.
    pub fn connect_lazy(self) -> Result<RedisStore, StoreError> {
        let (conn, wakeups) = match &self.source {
            Source::Client(client) => {
                let conn =
                    ConnectionManager::new_lazy_with_config((**client).clone(), self.config())
                        .map_err(|error| store_error(error, "connect"))?;
                (
                    Connection::Single(conn),
                    Some(Wakeups::new((**client).clone())),
                )
            }
            Source::Connection(conn) => (Connection::Single(conn.clone()), None),
            #[cfg(feature = "redis-cluster")]
            Source::ClusterConnection(conn) => {
                (Connection::Cluster(Cluster::new(conn.clone(), None)), None)
            }
            #[cfg(feature = "redis-cluster")]
            Source::ClusterNodes(_) => {
                return Err(StoreError::rejected(
                    "a Redis Cluster store connects at once: use `connect`, not `connect_lazy`",
                ))
            }
        };
        Ok(self.build(conn, wakeups))
    }

    fn config(&self) -> ConnectionManagerConfig {
        self.config.clone().unwrap_or_else(|| {
            ConnectionManagerConfig::new()
                .set_response_timeout(Some(self.answer_within()))
                .set_connection_timeout(Some(self.connection_timeout))
                .set_number_of_retries(3)
                .set_min_delay(Duration::from_millis(50))
                .set_max_delay(Duration::from_millis(500))
        })
    }

    /// How long a request may wait for its answer: the response timeout, and with
    /// [`wait_for_replicas`](Self::wait_for_replicas) the time `WAIT` may take on top of it.
    fn answer_within(&self) -> Duration {
        match self.replicas {
            Some((_, wait)) => self.response_timeout.saturating_add(wait),
            None => self.response_timeout,
        }
    }

    fn build(self, conn: Connection, wakeups: Option<std::sync::Arc<Wakeups>>) -> RedisStore {
        RedisStore::on(conn, wakeups, self.prefix, self.replicas)
    }
}
