//! A Redis Cluster connection that is replaced when it stops answering.
//!
//! While `redis-cli --cluster reshard` moves slots under load, redis-rs's cluster connection
//! can end up with every request timing out, for good, while a fresh connection to the same
//! nodes answers at once. A store on such a connection would fail every call until the
//! process restarts; this one connects again after a timeout.

use std::sync::{Arc, RwLock};

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisResult, Value};

use super::TARGET;

/// A cluster connection, shared by a store and its clones, and the client to replace it with.
#[derive(Clone)]
pub(crate) struct Cluster {
    shared: Arc<Shared>,
    /// The connection this handle keeps using, replaced or not: a `WAIT` must go over the
    /// connection that made the write it waits for.
    pinned: Option<(u64, ClusterConnection)>,
}

struct Shared {
    /// `None` for a connection the application made: it cannot be replaced.
    client: Option<ClusterClient>,
    /// The connection in use, and how many times it was replaced.
    current: RwLock<(u64, ClusterConnection)>,
    /// Held while a replacement connects, so that one stall makes one new connection.
    replacing: tokio::sync::Mutex<()>,
}

impl Cluster {
    /// `conn`, replaced through `client` (when given) after a timeout.
    pub(crate) fn new(conn: ClusterConnection, client: Option<ClusterClient>) -> Self {
        Cluster {
            shared: Arc::new(Shared {
                client,
                current: RwLock::new((0, conn)),
                replacing: tokio::sync::Mutex::new(()),
            }),
            pinned: None,
        }
    }

    /// A handle that keeps using the connection in use now, for a write and the `WAIT` after
    /// it.
    pub(crate) fn pinned(&self) -> Cluster {
        Cluster {
            shared: self.shared.clone(),
            pinned: Some(self.current()),
        }
    }

    /// The pinned connection, or the one in use now.
    fn connection(&self) -> (u64, ClusterConnection) {
        match &self.pinned {
            Some((generation, conn)) => (*generation, conn.clone()),
            None => self.current(),
        }
    }

    /// Sends one command and reads its reply. A timeout replaces the connection for the
    /// requests that follow (the store retries once on it).
    pub(crate) async fn query(&self, cmd: &Cmd) -> RedisResult<Value> {
        let (generation, mut conn) = self.connection();
        let result = cmd.query_async(&mut conn).await;
        if result.as_ref().is_err_and(|error| error.is_timeout()) {
            self.replace(generation).await;
        }
        result
    }

    /// Sends a `WAIT` to the primary that owns `key`'s slot, over this handle's connection:
    /// it counts the replicas of the write made on it, and of no other shard's. A `WAIT` that
    /// times out says the replicas lag, not that the connection stalled: nothing is replaced.
    pub(crate) async fn wait_on_primary_of(&self, cmd: &Cmd, key: &str) -> RedisResult<Value> {
        let (_, mut conn) = self.connection();
        let route = Route::with_key(key, SlotAddr::Master);
        let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
        conn.route_command(cmd.clone(), routing).await
    }

    /// Sends a keyless command to the primary that owns `slot`, or to any node for `None`. A
    /// timeout replaces the connection, as in [`query`](Self::query).
    pub(crate) async fn query_node(&self, cmd: &Cmd, slot: Option<u16>) -> RedisResult<Value> {
        let (generation, mut conn) = self.connection();
        let node = match slot {
            Some(slot) => SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master)),
            None => SingleNodeRoutingInfo::Random,
        };
        let result = conn
            .route_command(cmd.clone(), RoutingInfo::SingleNode(node))
            .await;
        if result.as_ref().is_err_and(|error| error.is_timeout()) {
            self.replace(generation).await;
        }
        result
    }

    fn current(&self) -> (u64, ClusterConnection) {
        let current = self
            .shared
            .current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (current.0, current.1.clone())
    }

    /// Connects again, unless the connection was replaced since `seen`. Requests that timed
    /// out meanwhile wait for it, so that their retry goes over the new connection.
    async fn replace(&self, seen: u64) {
        let Some(client) = &self.shared.client else {
            return;
        };
        let _one_at_a_time = self.shared.replacing.lock().await;
        if self.current().0 != seen {
            return;
        }
        match client.get_async_connection().await {
            Ok(fresh) => {
                tracing::warn!(target: TARGET, "a request to the Redis Cluster timed out; connected again");
                let mut current = self
                    .shared
                    .current
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                *current = (seen + 1, fresh);
            }
            Err(error) => {
                tracing::warn!(target: TARGET, %error, "a request to the Redis Cluster timed out, and connecting again failed");
            }
        }
    }
}
