//! The store under test: started on loopback through the test harness, or reached at a URL.

use std::sync::Arc;

use idem_core::store::Store;
use idem_stores::memory::MemoryStore;
use idem_stores::postgres::PostgresStore;
use idem_test_servers::dynamodb::server::TestMoto;
use idem_test_servers::postgres::server::TestPostgres;
use idem_test_servers::redis::cluster::TestRedisCluster;
use idem_test_servers::redis::server::TestRedis;

use crate::args::StoreKind;
use crate::connect::connect;
use crate::plan::StoreSpec;

/// The running store: its spec for workers, and whatever server this run started (stopped
/// when dropped).
pub(crate) struct Target {
    /// How workers reach it; `None` for the in-process memory store.
    pub(crate) spec: Option<StoreSpec>,
    /// The memory store, shared by in-process workers.
    pub(crate) memory: Option<Arc<dyn Store>>,
    /// What the report says the store is.
    pub(crate) described: String,
    servers: Servers,
}

/// The servers a run started, kept alive for its length.
#[allow(dead_code)]
enum Servers {
    None,
    Redis(TestRedis),
    Cluster(TestRedisCluster),
    Postgres(TestPostgres),
    Moto(TestMoto),
}

impl Target {
    /// Starts `kind`'s server on loopback, or takes `url`, and prepares its table. A Redis
    /// server that will be `restartable` keeps an append-only file, synced on every write; a
    /// cluster that will be `failed_over` has a replica per primary, and its workers have
    /// every write confirmed by it.
    pub(crate) async fn start(
        kind: StoreKind,
        url: Option<&str>,
        restartable: bool,
        failed_over: bool,
    ) -> Result<Target, String> {
        let missing = |program: &str| {
            format!(
                "{program} is not installed: run `source scripts/services.sh` first, or pass --url"
            )
        };
        let (spec, servers) = match kind {
            StoreKind::Memory => {
                return Ok(Target::in_process(
                    Arc::new(MemoryStore::new()),
                    "memory (in-process workers)",
                ))
            }
            StoreKind::Redis => match url {
                Some(url) => (redis(url), Servers::None),
                None => {
                    let server = if restartable {
                        TestRedis::start_persistent()
                    } else {
                        TestRedis::start_owned()
                    }
                    .ok_or_else(|| missing("redis-server"))?;
                    (redis(server.url()), Servers::Redis(server))
                }
            },
            StoreKind::RedisCluster => match url {
                Some(url) => (
                    StoreSpec::RedisCluster {
                        nodes: url.split(',').map(str::to_owned).collect(),
                        replicas: 0,
                    },
                    Servers::None,
                ),
                None => {
                    let replicas = u32::from(failed_over);
                    let cluster = TestRedisCluster::start_with_replicas(3, replicas as usize)
                        .ok_or_else(|| missing("redis-server"))?;
                    let nodes = cluster.urls();
                    (
                        StoreSpec::RedisCluster { nodes, replicas },
                        Servers::Cluster(cluster),
                    )
                }
            },
            StoreKind::Postgres => match url {
                Some(url) => (
                    StoreSpec::Postgres {
                        url: url.to_owned(),
                    },
                    Servers::None,
                ),
                None => {
                    let server = TestPostgres::start_owned().ok_or_else(|| missing("postgres"))?;
                    let url = format!("{}/postgres", server.server_url());
                    (StoreSpec::Postgres { url }, Servers::Postgres(server))
                }
            },
            StoreKind::DynamoDb => {
                let (endpoint, servers) = match url {
                    Some(url) => (url.to_owned(), Servers::None),
                    None => {
                        let moto = TestMoto::start_owned().ok_or_else(|| missing("moto_server"))?;
                        (moto.endpoint().to_owned(), Servers::Moto(moto))
                    }
                };
                let table = format!("idem-certify-{}", std::process::id());
                (StoreSpec::DynamoDb { endpoint, table }, servers)
            }
        };
        prepare(&spec).await?;
        Ok(Target {
            described: describe(&spec),
            spec: Some(spec),
            memory: None,
            servers,
        })
    }

    /// `store`, called by workers in this process.
    pub(crate) fn in_process(store: Arc<dyn Store>, described: &str) -> Target {
        Target {
            spec: None,
            memory: Some(store),
            described: described.to_owned(),
            servers: Servers::None,
        }
    }

    /// Whether [`restart`](Target::restart) keeps the records: a Redis server with its
    /// append-only file or a PostgreSQL server, started by this run.
    pub(crate) fn can_restart(kind: StoreKind, url: Option<&str>) -> bool {
        url.is_none() && matches!(kind, StoreKind::Redis | StoreKind::Postgres)
    }

    /// Kills the server and starts it again on its port and data.
    pub(crate) fn restart(&mut self) -> Result<(), String> {
        match &mut self.servers {
            Servers::Redis(server) => {
                server.kill();
                server.restart();
            }
            Servers::Postgres(server) => {
                server.kill();
                server.restart_after_kill();
            }
            _ => return Err("only a Redis or PostgreSQL server this run started restarts".into()),
        }
        Ok(())
    }

    /// The Redis Cluster this run started, for the faults that act on it.
    pub(crate) fn cluster(&mut self) -> Result<&mut TestRedisCluster, String> {
        match &mut self.servers {
            Servers::Cluster(cluster) => Ok(cluster),
            _ => Err("only a Redis Cluster this run started has cluster faults".into()),
        }
    }

    /// A store on the target, for the final reads.
    pub(crate) async fn store(&self) -> Result<Arc<dyn Store>, String> {
        match (&self.memory, &self.spec) {
            (Some(memory), _) => Ok(memory.clone()),
            (None, Some(spec)) => connect(spec).await,
            (None, None) => Err("a target has a store".to_owned()),
        }
    }
}

fn redis(url: &str) -> StoreSpec {
    StoreSpec::Redis {
        url: url.to_owned(),
    }
}

/// Creates the table the workers write to, where the store has one.
async fn prepare(spec: &StoreSpec) -> Result<(), String> {
    match spec {
        StoreSpec::Postgres { url } => {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(1)
                .connect(url)
                .await
                .map_err(|error| format!("connecting to {url}: {error}"))?;
            PostgresStore::new(pool)
                .migrate()
                .await
                .map_err(|error| format!("creating the table: {error}"))
        }
        StoreSpec::DynamoDb { endpoint, table } => {
            let client = idem_test_servers::dynamodb::client(
                endpoint,
                idem_test_servers::dynamodb::ClientOptions::default(),
                [],
            );
            idem_stores::dynamodb::DynamoDbStore::new(client, table)
                .create_table()
                .await
                .map(|_| ())
                .map_err(|error| format!("creating table {table}: {error}"))
        }
        StoreSpec::Redis { .. } | StoreSpec::RedisCluster { .. } => Ok(()),
    }
}

fn describe(spec: &StoreSpec) -> String {
    match spec {
        StoreSpec::Redis { url } => format!("redis at {url}"),
        StoreSpec::RedisCluster { nodes, replicas: 0 } => {
            format!("redis cluster of {} nodes", nodes.len())
        }
        StoreSpec::RedisCluster { nodes, replicas } => format!(
            "redis cluster of {} nodes, {replicas} replica per primary confirming every write",
            nodes.len()
        ),
        StoreSpec::Postgres { url } => format!("postgres at {url}"),
        StoreSpec::DynamoDb { endpoint, table } => format!("dynamodb table {table} at {endpoint}"),
    }
}
