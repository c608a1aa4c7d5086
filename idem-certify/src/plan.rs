//! What a worker is told to do: which store, which keys, for how long. The coordinator hands
//! it over as JSON on the worker's command line.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where the store under test is, as a worker process connects to it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum StoreSpec {
    /// One Redis server.
    Redis {
        /// `redis://host:port`.
        url: String,
    },
    /// A Redis Cluster.
    RedisCluster {
        /// One URL per node.
        nodes: Vec<String>,
        /// How many replicas confirm every write (`wait_for_replicas`); 0 for none.
        #[serde(default)]
        replicas: u32,
    },
    /// A PostgreSQL database whose table is created.
    Postgres {
        /// `postgres://user@host:port/database`.
        url: String,
    },
    /// A DynamoDB table, created, at an endpoint.
    DynamoDb {
        /// `http://host:port`.
        endpoint: String,
        /// The table.
        table: String,
    },
}

/// One worker's instructions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct WorkerPlan {
    /// The worker's name in the history: its slot and incarnation, `w3.2`.
    pub(crate) name: String,
    /// The store. `None` for an in-process worker, which is handed its store.
    pub(crate) store: Option<StoreSpec>,
    /// The conformance kit's broken store to wrap the store in, by `Fault` name.
    pub(crate) broken: Option<String>,
    /// The run's id: every key of the run is under it.
    pub(crate) run: String,
    /// Where the worker appends its history.
    pub(crate) history: PathBuf,
    /// When the worker stops starting calls, in microseconds since the epoch.
    pub(crate) until_micros: u64,
    /// The lease of every call.
    pub(crate) lease_ms: u64,
    /// The seed of the worker's choices.
    pub(crate) seed: u64,
    /// How far the worker's clock is off the system's, in milliseconds.
    pub(crate) clock_offset_ms: i64,
}

impl WorkerPlan {
    /// The lease of every call.
    pub(crate) fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }
}
