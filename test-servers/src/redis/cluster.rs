//! Redis Clusters for the tests: nodes started on free loopback ports and joined into one
//! cluster, all slots assigned, every node agreeing that the cluster is up.
//!
//! Needs `redis-server` and `redis-cli`; where they are missing the tests are reported as
//! ignored, or fail with `IDEM_REQUIRE_BACKENDS=1`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{free_port, scratch_dir, ServerCommand, ServerProcess};
use crate::redis::server::{unavailable, PROGRAM};

/// How many cluster bus ports a node tries before its start fails.
const BUS_PORT_ATTEMPTS: usize = 3;

/// The client program used to join the nodes.
pub const CLI: &str = "redis-cli";

/// A Redis Cluster, each node a process of this test: primaries only, or primaries each with
/// their replicas.
#[derive(Debug)]
pub struct TestRedisCluster {
    nodes: Vec<ServerProcess>,
    dir: PathBuf,
}

impl TestRedisCluster {
    /// Starts `nodes` primaries and joins them; `None` if that cannot be done,
    /// unless backends are required.
    pub fn start(nodes: usize) -> Option<TestRedisCluster> {
        Self::start_with_replicas(nodes, 0)
    }

    /// Starts `primaries` primaries with `replicas` replicas each, joins them, and waits until
    /// every replica follows its primary; `None` if that cannot be done, unless backends are
    /// required.
    pub fn start_with_replicas(primaries: usize, replicas: usize) -> Option<TestRedisCluster> {
        match Self::try_start(primaries * (1 + replicas), replicas) {
            Ok(cluster) => Some(cluster),
            Err(error) => {
                let hint = if error.kind() == io::ErrorKind::NotFound {
                    " (install redis-server and redis-cli with scripts/services.sh)"
                } else {
                    ""
                };
                unavailable(&format!("cannot start a Redis Cluster{hint}: {error}"))
            }
        }
    }

    fn try_start(count: usize, replicas: usize) -> io::Result<TestRedisCluster> {
        let dir = scratch_dir("redis-cluster")?;
        let mut cluster = TestRedisCluster {
            nodes: Vec::with_capacity(count),
            dir,
        };
        for _ in 0..count.max(1) {
            let node = Self::start_node(&cluster.dir)?;
            cluster.nodes.push(node);
        }
        cluster.join(replicas)?;
        Ok(cluster)
    }

    /// Starts one node in `dir`. Its cluster bus gets a port of its own (the default, its port
    /// plus 10000, may not exist); another process may take that port before the node binds
    /// it, and then the node starts again with another.
    fn start_node(dir: &Path) -> io::Result<ServerProcess> {
        let mut last_error = None;
        for _ in 0..BUS_PORT_ATTEMPTS {
            let bus = free_port()?;
            let config = dir.join(format!("nodes-{bus}.conf"));
            let command = ServerCommand::new(PROGRAM)
                .args(crate::redis::server::base_args())
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
                .args(["--cluster-port".to_owned(), bus.to_string()])
                // A primary writes a snapshot to sync its replica: into the scratch directory.
                .args(["--dir".to_owned(), dir.to_string_lossy().into_owned()])
                .args(["--dbfilename".to_owned(), format!("dump-{bus}.rdb")])
                .args([
                    "--cluster-config-file".to_owned(),
                    config.to_string_lossy().into_owned(),
                ]);
            match ServerProcess::start(command) {
                Ok(node) => return Ok(node),
                Err(error) if error.kind() == io::ErrorKind::Other => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no cluster bus port could be used")))
    }

    fn join(&self, replicas: usize) -> io::Result<()> {
        if let [node] = self.nodes.as_slice() {
            cli(&[
                "-p",
                &node.port().to_string(),
                "CLUSTER",
                "ADDSLOTSRANGE",
                "0",
                "16383",
            ])?;
        } else {
            let mut args = vec!["--cluster".to_owned(), "create".to_owned()];
            args.extend(self.nodes.iter().map(|n| n.addr().to_string()));
            args.extend(["--cluster-replicas".to_owned(), replicas.to_string()]);
            args.push("--cluster-yes".to_owned());
            cli(&args.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        self.await_every_node(
            deadline,
            &["CLUSTER", "INFO"],
            "saw the cluster up",
            |info| info.contains("cluster_state:ok"),
        )?;
        if replicas > 0 {
            self.await_every_node(
                deadline,
                &["INFO", "replication"],
                "had its replication link up",
                |info| info.contains("role:master") || info.contains("master_link_status:up"),
            )?;
        }
        Ok(())
    }

    /// Asks every node `args` until its answer is `ready`, or fails once `deadline` passes
    /// with the node that never `became` so.
    fn await_every_node(
        &self,
        deadline: Instant,
        args: &[&str],
        became: &str,
        ready: impl Fn(&str) -> bool,
    ) -> io::Result<()> {
        for node in 0..self.nodes.len() {
            loop {
                let answer = self.cli_on(node, args)?;
                if ready(&answer) {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("node {node} never {became}:\n{answer}"),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// The nodes that replicate node `primary`.
    pub fn replicas_of(&self, primary: usize) -> io::Result<Vec<usize>> {
        let id = self.node_id(primary)?;
        self.listed(primary, |fields| fields.get(3) == Some(&id.as_str()))
    }

    /// Kills node `node` (SIGKILL), as a crashed server.
    pub fn kill(&mut self, node: usize) {
        self.nodes[node].kill();
    }

    /// Starts node `node` again on its port and cluster configuration, after a
    /// [`kill`](Self::kill): it rejoins the cluster it knew, as a replica if its shard was
    /// failed over meanwhile, and syncs its data from its primary.
    pub fn restart(&mut self, node: usize) -> io::Result<()> {
        self.nodes[node].restart()
    }

    /// The nodes that serve slots as primaries, as node `asked` sees the cluster.
    pub fn primaries(&self, asked: usize) -> io::Result<Vec<usize>> {
        self.listed(asked, |fields| {
            let flags: Vec<&str> = fields.get(2).map_or(Vec::new(), |f| f.split(',').collect());
            flags.contains(&"master") && !flags.contains(&"fail") && fields.len() > 8
        })
    }

    /// The nodes whose line of `CLUSTER NODES`, as node `asked` answers it, split into its
    /// fields, is `wanted`.
    fn listed(&self, asked: usize, wanted: impl Fn(&[&str]) -> bool) -> io::Result<Vec<usize>> {
        let nodes = self.cli_on(asked, &["CLUSTER", "NODES"])?;
        let ports: Vec<String> = nodes
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|fields| wanted(fields))
            .filter_map(|fields| {
                let addr = fields.get(1)?.split(['@', ',']).next()?;
                addr.rsplit(':').next().map(str::to_owned)
            })
            .collect();
        Ok(self
            .ports()
            .iter()
            .enumerate()
            .filter(|(_, port)| ports.contains(&port.to_string()))
            .map(|(node, _)| node)
            .collect())
    }

    /// Asks node `node` `args` until its answer is `ready`, for at most `within`; fails with
    /// its last answer, saying it never `became` so.
    pub fn await_node(
        &self,
        node: usize,
        args: &[&str],
        became: &str,
        within: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> io::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let answer = self.cli_on(node, args);
            if let Ok(answer) = &answer {
                if ready(answer) {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("node {node} never {became}: {answer:?}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The URLs of every node.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("redis://{}/", node.addr()))
            .collect()
    }

    /// The nodes' ports.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(ServerProcess::port).collect()
    }
    /// Runs `redis-cli` with `args` on node `node` (an index into [`ports`](Self::ports)).
    pub fn cli_on(&self, node: usize, args: &[&str]) -> io::Result<String> {
        let port = self.nodes[node].port().to_string();
        let mut all = vec!["-p", port.as_str()];
        all.extend_from_slice(args);
        cli(&all)
    }

    /// The cluster id of node `node`.
    pub fn node_id(&self, node: usize) -> io::Result<String> {
        Ok(self.cli_on(node, &["CLUSTER", "MYID"])?.trim().to_owned())
    }

    /// The hash slot of `key`.
    pub fn slot_of(&self, key: &str) -> io::Result<u16> {
        let slot = self.cli_on(0, &["CLUSTER", "KEYSLOT", key])?;
        slot.trim().parse().map_err(io::Error::other)
    }

    /// The node that owns `slot`, as node 0 sees the cluster.
    pub fn owner_of(&self, slot: u16) -> io::Result<usize> {
        let nodes = self.cli_on(0, &["CLUSTER", "NODES"])?;
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(addr) = fields.get(1) else {
                continue;
            };
            let owns = fields.iter().skip(8).any(|range| {
                let (first, last) = range.split_once('-').unwrap_or((range, range));
                match (first.parse::<u16>(), last.parse::<u16>()) {
                    (Ok(first), Ok(last)) => (first..=last).contains(&slot),
                    _ => false,
                }
            });
            if !owns {
                continue;
            }
            let port = addr.split(['@', ',']).next().unwrap_or("");
            let port = port.rsplit(':').next().unwrap_or("");
            if let Some(node) = self.ports().iter().position(|p| p.to_string() == port) {
                return Ok(node);
            }
        }
        Err(io::Error::other(format!(
            "no node owns slot {slot}:\n{nodes}"
        )))
    }
}

impl Drop for TestRedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs `redis-cli -h 127.0.0.1 ARGS...`; its stdout, or an error with its output.
pub fn cli(args: &[&str]) -> io::Result<String> {
    let output = Command::new(CLI)
        .arg("-h")
        .arg("127.0.0.1")
        .args(args)
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() || stdout.starts_with("ERR") {
        return Err(io::Error::other(format!(
            "`{CLI} {}` failed: {stdout}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(stdout)
}
