//! [`RedisStore`]s on test servers (one server, or a cluster) as conformance [`Target`]s, with
//! raw access to the server for corrupting records and counting the commands it ran.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use idem_conformance::Target;
use idem_core::{
    store::{OwnerToken, Store},
    Key,
};
use idem_stores::redis::client::aio::MultiplexedConnection;
use idem_stores::redis::client::cluster::ClusterClient;
use idem_stores::redis::client::cluster_async::ClusterConnection;
use idem_stores::redis::client::{self as redis, Client};
use idem_stores::redis::RedisStore;

use crate::redis::cluster::TestRedisCluster;
use crate::redis::server::TestRedis;

/// A test server with a store on it. Every target gets a key prefix of its own, so targets may
/// share a server named by `IDEM_REDIS_URL`.
pub struct RedisTarget {
    redis: TestRedis,
    prefix: String,
    store: RedisStore,
}

impl RedisTarget {
    /// A store on [`TestRedis::start`]'s server; `None` if there is none.
    pub async fn start() -> Option<Self> {
        let redis = TestRedis::start()?;
        Some(Self::on(redis).await)
    }

    /// A store on a server of this test's own, so that no other test's commands are counted;
    /// `None` if there is none.
    pub async fn on_owned() -> Option<Self> {
        Some(Self::on(TestRedis::start_owned()?).await)
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        self.redis.url()
    }

    /// The key prefix of this target's stores.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A store on `redis`, with a fresh key prefix.
    pub async fn on(redis: TestRedis) -> Self {
        let prefix = format!("test-{}:", OwnerToken::generate().as_str());
        let store = Self::store_on(&redis, &prefix).await;
        RedisTarget {
            redis,
            prefix,
            store,
        }
    }

    /// A new, independent store (its own connection) on the same server and prefix, as a
    /// second service instance would have.
    pub async fn another_store(&self) -> RedisStore {
        Self::store_on(&self.redis, &self.prefix).await
    }

    async fn store_on(redis: &TestRedis, prefix: &str) -> RedisStore {
        let client = Client::open(redis.url()).expect("a valid Redis URL");
        RedisStore::builder(client)
            .prefix(prefix)
            .connect()
            .await
            .expect("the test server accepts connections")
    }

    /// The store under test.
    pub fn redis_store(&self) -> &RedisStore {
        &self.store
    }

    /// The server.
    pub fn server(&mut self) -> &mut TestRedis {
        &mut self.redis
    }

    /// A raw connection to the server, bypassing the store.
    pub async fn raw(&self) -> MultiplexedConnection {
        Client::open(self.redis.url())
            .expect("a valid Redis URL")
            .get_multiplexed_async_connection()
            .await
            .expect("the test server accepts connections")
    }

    /// Writes `value` as a plain string under the record key of `key`.
    pub async fn set_raw(&self, key: &Key, value: &[u8]) {
        let mut conn = self.raw().await;
        let _: () = redis::cmd("SET")
            .arg(self.store.redis_key(key))
            .arg(value)
            .query_async(&mut conn)
            .await
            .expect("SET works");
    }

    /// Resets the server's command statistics (`CONFIG RESETSTAT`).
    pub async fn reset_command_stats(&self) {
        let mut conn = self.raw().await;
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await
            .expect("CONFIG RESETSTAT works");
    }

    /// Runs `scenario` and returns its output with the commands clients sent the server
    /// meanwhile, in order, as `MONITOR` saw them: commands scripts ran inside the server are
    /// left out, so every request counts once and a stray plain command shows. The raw
    /// connection's own set-up is left out too.
    pub async fn client_commands<F: std::future::Future>(
        &self,
        scenario: F,
    ) -> (F::Output, Vec<String>) {
        let client = Client::open(self.redis.url()).expect("a valid Redis URL");
        let monitor = client.get_async_monitor().await.expect("MONITOR works");
        let mut lines = monitor.into_on_message::<String>();
        let output = scenario.await;
        // Everything the server ran before this marker is in the stream before it.
        let marker = format!("end-of-scenario-{}", OwnerToken::generate().as_str());
        let mut raw = self.raw().await;
        let _: String = redis::cmd("ECHO")
            .arg(&marker)
            .query_async(&mut raw)
            .await
            .expect("ECHO works");
        let mut commands = Vec::new();
        while let Some(line) = lines.next().await {
            if line.contains(&marker) {
                return (output, commands);
            }
            if let Some(command) = client_command(&line) {
                if !matches!(command.as_str(), "CLIENT" | "HELLO") {
                    commands.push(command);
                }
            }
        }
        panic!("the MONITOR stream ended before the marker");
    }

    /// The commands the server ran since the last reset, from `INFO commandstats`, leaving out
    /// the `CONFIG` and `INFO` commands of the measurement itself, and the connection set-up
    /// (`CLIENT`, `HELLO`) of the raw connection used to measure.
    pub async fn command_calls(&self) -> Vec<(String, u64)> {
        let mut conn = self.raw().await;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .expect("INFO works");
        parse_commandstats(&info)
            .into_iter()
            .filter(|(name, _)| {
                !(name == "info"
                    || name.starts_with("config|")
                    || name.starts_with("client|")
                    || name == "client"
                    || name == "hello")
            })
            .collect()
    }
}

/// The name of the command a `MONITOR` line shows a client sending, in upper case; `None` for
/// commands a script ran inside the server (`[0 lua]`) and lines that are not commands.
fn client_command(line: &str) -> Option<String> {
    // `1700000000.123456 [0 127.0.0.1:50000] "EVALSHA" "..."`
    let (source, rest) = line.split_once("] ")?;
    if source.ends_with(" lua") {
        return None;
    }
    Some(rest.split('"').nth(1)?.to_uppercase())
}

/// `(command, calls)` for every `cmdstat_NAME:calls=N,...` line.
pub fn parse_commandstats(info: &str) -> Vec<(String, u64)> {
    info.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("cmdstat_")?;
            let (name, stats) = rest.split_once(':')?;
            let calls = stats
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

#[async_trait]
impl Target for RedisTarget {
    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }

    async fn corrupt(&self, key: &Key) -> bool {
        self.set_raw(key, b"\xffnot an idempotency record").await;
        true
    }
}

/// A store on a Redis Cluster of this test's own.
pub struct RedisClusterTarget {
    cluster: TestRedisCluster,
    store: RedisStore,
}

impl RedisClusterTarget {
    /// A store on a fresh cluster of `nodes` primaries; `None` if there is none.
    pub async fn start(nodes: usize) -> Option<Self> {
        let cluster = TestRedisCluster::start(nodes)?;
        let urls = cluster.urls();
        let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
        let store = RedisStore::cluster_builder(&urls)
            .prefix(format!("test-{}:", OwnerToken::generate().as_str()))
            .connect()
            .await
            .expect("the test cluster accepts connections");
        Some(RedisClusterTarget { cluster, store })
    }

    /// The store under test.
    pub fn redis_store(&self) -> &RedisStore {
        &self.store
    }

    /// The cluster.
    pub fn cluster(&self) -> &TestRedisCluster {
        &self.cluster
    }

    /// A raw connection to the cluster, bypassing the store.
    pub async fn raw(&self) -> ClusterConnection {
        ClusterClient::new(self.cluster.urls())
            .expect("valid node URLs")
            .get_async_connection()
            .await
            .expect("the test cluster accepts connections")
    }
}

#[async_trait]
impl Target for RedisClusterTarget {
    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }

    async fn corrupt(&self, key: &Key) -> bool {
        let mut conn = self.raw().await;
        let _: () = redis::cmd("SET")
            .arg(self.store.redis_key(key))
            .arg(b"\xffnot an idempotency record")
            .query_async(&mut conn)
            .await
            .expect("SET works");
        true
    }
}

#[cfg(test)]
mod tests {
    use super::client_command;

    #[test]
    fn monitor_lines_tell_clients_from_scripts() {
        assert_eq!(
            client_command(r#"1700000000.123456 [0 127.0.0.1:50000] "EVALSHA" "abc" "1""#),
            Some("EVALSHA".to_owned())
        );
        assert_eq!(
            client_command(r#"1700000000.123456 [0 lua] "HGETALL" "k""#),
            None
        );
        assert_eq!(client_command("OK"), None);
    }
}
