//! The faults a Redis Cluster this run started suffers while workers call: slots moved, a
//! primary failed over, a replica lost.

use std::io;
use std::time::Duration;

use idem_test_servers::redis::cluster::{cli, TestRedisCluster};

/// How long a node may take to reach the state a fault waits for.
const SETTLE: Duration = Duration::from_secs(60);

/// Moves `slots` slots from one primary to the next (the `turn`-th in turn, so that none runs
/// out of slots), as an operator's `redis-cli --cluster reshard` does: each slot marked
/// migrating, its keys moved one by one, then handed over, while calls go on.
pub(crate) fn reshard(cluster: &TestRedisCluster, turn: usize, slots: u32) -> Result<(), String> {
    let primaries = primaries(cluster)?;
    let (from, to) = (
        primaries[turn % primaries.len()],
        primaries[(turn + 1) % primaries.len()],
    );
    let id = |node: usize| {
        cluster
            .node_id(node)
            .map_err(|error| format!("node {node}'s id: {error}"))
    };
    let (from_id, to_id) = (id(from)?, id(to)?);
    let entry = format!("127.0.0.1:{}", cluster.ports()[from]);
    let slots = slots.to_string();
    cli(&[
        "--cluster",
        "reshard",
        &entry,
        "--cluster-from",
        &from_id,
        "--cluster-to",
        &to_id,
        "--cluster-slots",
        &slots,
        "--cluster-yes",
    ])
    .map(drop)
    .map_err(|error| format!("resharding: {error}"))
}

/// Kills one primary (the `turn`-th in turn) and lets its replica take its shard over, once
/// the cluster's node timeout marks it failed; then starts it again, and waits until it
/// follows the promoted node and every node sees the cluster up.
pub(crate) fn failover(cluster: &mut TestRedisCluster, turn: usize) -> Result<(), String> {
    let failed = |what: &'static str| move |error: io::Error| format!("failover: {what}: {error}");
    let victim = primary(cluster, turn)?;
    let heir = replica_of(cluster, victim).map_err(failed("the primary's replica"))?;
    cluster.kill(victim);
    cluster
        .await_node(
            heir,
            &["INFO", "replication"],
            "took its primary's shard over",
            SETTLE,
            |info| info.contains("role:master"),
        )
        .map_err(failed("promotion"))?;
    cluster.restart(victim).map_err(failed("restarting"))?;
    following(cluster, victim).map_err(failed("rejoining"))?;
    for node in 0..cluster.ports().len() {
        cluster
            .await_node(
                node,
                &["CLUSTER", "INFO"],
                "saw the cluster up",
                SETTLE,
                |info| info.contains("cluster_state:ok"),
            )
            .map_err(failed("the cluster's state"))?;
    }
    Ok(())
}

/// Kills the replica of one primary (the `turn`-th in turn), leaves it down for `down`, then
/// starts it again and waits until it follows its primary. Meanwhile the shard's writes are
/// not confirmed: they fail, though the primary applied them.
pub(crate) fn lose_replica(
    cluster: &mut TestRedisCluster,
    turn: usize,
    down: Duration,
) -> Result<(), String> {
    let failed =
        |what: &'static str| move |error: io::Error| format!("replica loss: {what}: {error}");
    let primary = primary(cluster, turn)?;
    let replica = replica_of(cluster, primary).map_err(failed("the primary's replica"))?;
    cluster.kill(replica);
    std::thread::sleep(down);
    cluster.restart(replica).map_err(failed("restarting"))?;
    following(cluster, replica).map_err(failed("rejoining"))
}

/// The `turn`-th primary, in turn.
fn primary(cluster: &TestRedisCluster, turn: usize) -> Result<usize, String> {
    let primaries = primaries(cluster)?;
    Ok(primaries[turn % primaries.len()])
}

/// The cluster's primaries, as the first node that answers sees them.
fn primaries(cluster: &TestRedisCluster) -> Result<Vec<usize>, String> {
    let mut last = String::from("no node");
    for asked in 0..cluster.ports().len() {
        match cluster.primaries(asked) {
            Ok(primaries) if !primaries.is_empty() => return Ok(primaries),
            Ok(_) => last = format!("node {asked} sees no primary"),
            Err(error) => last = error.to_string(),
        }
    }
    Err(format!("the cluster's primaries: {last}"))
}

fn replica_of(cluster: &TestRedisCluster, primary: usize) -> io::Result<usize> {
    cluster
        .replicas_of(primary)?
        .first()
        .copied()
        .ok_or_else(|| io::Error::other(format!("node {primary} has no replica")))
}

/// Waits until `node` follows a primary with its replication link up.
fn following(cluster: &TestRedisCluster, node: usize) -> io::Result<()> {
    cluster.await_node(
        node,
        &["INFO", "replication"],
        "followed a primary",
        SETTLE,
        |info| info.contains("master_link_status:up"),
    )
}
