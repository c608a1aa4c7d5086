//! A store from its [`StoreSpec`], as a worker builds it, and the conformance kit's broken
//! stores by name.

use std::sync::Arc;

use idem_conformance::broken::{Broken, Fault};
use idem_core::store::Store;
use idem_stores::dynamodb::DynamoDbStore;
use idem_stores::postgres::PostgresStore;
use idem_stores::redis::RedisStore;
use idem_test_servers::dynamodb::{client, ClientOptions};

use crate::plan::StoreSpec;

/// How long a write on a replicated cluster waits for its replica: long enough for a live
/// replica on a loaded machine, short of the default lease.
const REPLICA_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Connects to the store `spec` names.
pub(crate) async fn connect(spec: &StoreSpec) -> Result<Arc<dyn Store>, String> {
    Ok(match spec {
        StoreSpec::Redis { url } => Arc::new(
            RedisStore::connect(url)
                .await
                .map_err(|error| format!("connecting to {url}: {error}"))?,
        ),
        StoreSpec::RedisCluster { nodes, replicas } => {
            let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
            let mut builder = RedisStore::cluster_builder(&nodes);
            if *replicas > 0 {
                builder = builder.wait_for_replicas(*replicas, REPLICA_WAIT);
            }
            Arc::new(
                builder
                    .connect()
                    .await
                    .map_err(|error| format!("connecting to the cluster {nodes:?}: {error}"))?,
            )
        }
        StoreSpec::Postgres { url } => {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(4)
                .acquire_timeout(std::time::Duration::from_secs(5))
                .connect(url)
                .await
                .map_err(|error| format!("connecting to {url}: {error}"))?;
            Arc::new(PostgresStore::new(pool))
        }
        StoreSpec::DynamoDb { endpoint, table } => {
            let client = client(endpoint, ClientOptions::default(), []);
            Arc::new(DynamoDbStore::new(client, table))
        }
    })
}

/// `store`, breaking the rule `broken` names, when it names one.
pub(crate) fn wrap(store: Arc<dyn Store>, broken: Option<&str>) -> Result<Arc<dyn Store>, String> {
    match broken {
        None => Ok(store),
        Some(name) => Ok(Arc::new(Broken::new(store, broken_fault(name)?))),
    }
}

/// The broken store's fault called `name` (`ReserveAlwaysGrants` or `reserve-always-grants`).
pub(crate) fn broken_fault(name: &str) -> Result<Fault, String> {
    let folded = |text: &str| text.replace(['-', '_'], "").to_ascii_lowercase();
    Fault::ALL
        .into_iter()
        .find(|fault| folded(&format!("{fault:?}")) == folded(name))
        .ok_or_else(|| {
            let known: Vec<String> = Fault::ALL.iter().map(|f| format!("{f:?}")).collect();
            format!(
                "no broken store is called `{name}`; the kit has {}",
                known.join(", ")
            )
        })
}
