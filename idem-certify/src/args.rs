//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Certifies an idem store: worker processes call idempotent functions on it while faults are
/// injected, and a checker reads the history they recorded. Prints a summary ending in
/// `anomalies: N` and exits non-zero when N > 0.
#[derive(Debug, Parser)]
#[command(name = "idem-certify", version)]
pub(crate) struct Cli {
    /// A worker, when the coordinator started this process as one.
    #[command(subcommand)]
    pub(crate) mode: Option<Mode>,
    /// The run.
    #[command(flatten)]
    pub(crate) run: RunArgs,
}

/// A run's options.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The store to certify.
    #[arg(long, value_enum)]
    pub(crate) store: Option<StoreKind>,
    /// Use this server instead of starting one: redis://host:port, a comma-separated list of
    /// cluster nodes, a postgres:// database URL, or a DynamoDB endpoint (http://host:port).
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// How long the workers call, in seconds.
    #[arg(long, default_value_t = 20)]
    pub(crate) seconds: u64,
    /// How many worker processes (in-process workers for memory).
    #[arg(long, default_value_t = 4)]
    pub(crate) workers: u32,
    /// The faults to inject, comma-separated: kill, stop, net, restart, clock, clock-beyond;
    /// `none` for none. Default: every one the store allows but clock-beyond (memory, whose
    /// workers share this process, allows none; net needs one server address, restart a store
    /// that keeps its records through one).
    #[arg(long, value_delimiter = ',')]
    pub(crate) faults: Option<Vec<FaultKind>>,
    /// Wrap the store in one of the conformance kit's broken stores (ReserveAlwaysGrants,
    /// OwnerIgnored, RenewDoesNotExtend, StepsForgottenOnTakeover, ...): the run must find
    /// anomalies.
    #[arg(long)]
    pub(crate) broken: Option<String>,
    /// The lease of every call, in milliseconds.
    #[arg(long, default_value_t = 1_000)]
    pub(crate) lease_ms: u64,
    /// Where the histories and the report go. Default: target/certify/STORE-SECONDS.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// The seed of the workload's and the faults' choices. Default: from the clock.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Certify an HTTP front end instead of the engine alone: server processes serve an
    /// idempotent endpoint behind it on the store, and callers in this process send requests
    /// through idem-client. `--workers` is then the number of server processes.
    #[arg(long, value_enum)]
    pub(crate) front: Option<FrontKind>,
    /// With `--front`: the endpoint charges each request, in a step, at a downstream service
    /// (behind its own layer and store) through idem-client, with the keys it derives.
    #[arg(long, requires = "front")]
    pub(crate) downstream: bool,
    /// With `--front`: how many callers send requests at once.
    #[arg(long, default_value_t = 8)]
    pub(crate) callers: u32,
}

impl RunArgs {
    /// The faults `--faults` names, without `none`; `None` when the option is absent, so the
    /// run chooses its defaults.
    pub(crate) fn named_faults(&self) -> Option<Vec<FaultKind>> {
        let named = self.faults.as_ref()?;
        Some(
            named
                .iter()
                .copied()
                .filter(|&fault| fault != FaultKind::None)
                .collect(),
        )
    }
}

/// The HTTP front ends `--front` certifies, each idem-http's layer on a framework.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FrontKind {
    /// `IdempotencyLayer` as a tower layer around an axum router.
    Tower,
    /// `IdempotencyLayer` as actix-web middleware (`App::wrap`).
    Actix,
    /// `IdempotencyLayer` as poem middleware (`EndpointExt::with`).
    Poem,
    /// `IdempotencyLayer` as a salvo hoop (`Router::hoop`).
    Salvo,
    /// idem-lambda's `LambdaHttpLayer` around a `lambda_http` function, each server a function
    /// process polling cargo-lambda's emulator of the Lambda Runtime API, reached through its
    /// function URL.
    Lambda,
}

/// The stores `idem-certify` starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreKind {
    /// The memory store, shared by workers in this process.
    Memory,
    /// One Redis server.
    Redis,
    /// A Redis Cluster of three nodes.
    RedisCluster,
    /// PostgreSQL.
    Postgres,
    /// DynamoDB (moto_server).
    #[value(name = "dynamodb")]
    DynamoDb,
}

/// The faults injected into worker processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FaultKind {
    /// No fault.
    None,
    /// SIGKILL a worker; a new one takes its slot.
    Kill,
    /// SIGSTOP a worker for longer than the lease, then SIGCONT.
    Stop,
    /// Latency, stalls, cut connections and dropped answers between a worker and the store.
    Net,
    /// The store's server killed and restarted (Redis with its append-only file, PostgreSQL).
    Restart,
    /// A Redis Cluster's slots moved from one node to another while workers call
    /// (`redis-cli --cluster reshard`).
    Reshard,
    /// A Redis Cluster's primary killed (SIGKILL) while workers call: its replica takes its
    /// shard over, and it is started again to follow it. The cluster then runs with a replica
    /// per primary, and every write waits for the replica (`wait_for_replicas`).
    Failover,
    /// A Redis Cluster's replica killed for two to three leases, then started again: its
    /// shard's writes reach the primary but are not confirmed meanwhile. The cluster then runs
    /// with a replica per primary, and every write waits for the replica.
    ReplicaLoss,
    /// Each worker's clock off by up to a quarter of the lease.
    Clock,
    /// Each worker's clock off by one to two leases: beyond what leases assume, so anomalies
    /// are expected. Shows what skew does; never on by default.
    ClockBeyond,
}

impl FaultKind {
    /// The fault's name on the command line and in reports: `replica-loss`, `clock-beyond`.
    pub(crate) fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(|| format!("{self:?}"), |value| value.get_name().to_owned())
    }

    /// Whether the fault acts on a Redis Cluster this run starts.
    pub(crate) fn needs_own_cluster(self) -> bool {
        matches!(
            self,
            FaultKind::Reshard | FaultKind::Failover | FaultKind::ReplicaLoss
        )
    }

    /// Whether the fault needs a replica per primary.
    pub(crate) fn needs_replicas(self) -> bool {
        matches!(self, FaultKind::Failover | FaultKind::ReplicaLoss)
    }
}

/// The hidden entry points of the processes the coordinator starts.
#[derive(Debug, Subcommand)]
pub(crate) enum Mode {
    /// Run one worker (started by the coordinator).
    #[command(hide = true)]
    Worker {
        /// The worker's plan, as JSON.
        #[arg(long)]
        plan: String,
    },
    /// Serve one front end's endpoint, or the downstream service (started by the
    /// coordinator of a `--front` run).
    #[command(hide = true)]
    Serve {
        /// The server's plan, as JSON.
        #[arg(long)]
        plan: String,
    },
}
