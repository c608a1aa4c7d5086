//! Replays by the number of connections: idem-http on the memory store, with and without its
//! replay cache, against `axum-idempotent`, each at every count of `IDEM_BENCH_CONNECTIONS`
//! keep-alive connections; requests per second, p50 and p99 latency (from sending a request to
//! reading its whole answer, queueing in the one-thread client included), and idem-http's
//! requests per second over the peer's in the same round.

use std::time::Duration;

use crate::limits::too_few_files;
use crate::load::{self, Connection, Keys, Measured};
use crate::{median, Router};

/// The peer idem-http is compared with.
const PEER: &str = "axum-idempotent, memory (moka)";
/// The routers of the table, the peer last.
const COMPARED: [&str; 3] = ["idem-http, memory", "idem-http, memory, replay cache", PEER];
/// How long each router's replays run before a level's rounds, to warm its connections up.
const WARM_UP: Duration = Duration::from_millis(300);
/// How long a router may take to accept a level's connections and answer their first
/// requests before the level is given up (a router out of file descriptors accepts none).
const OPENING: Duration = Duration::from_secs(30);

/// `connections` connections to `router`, each with its replayed key answered once.
async fn open_pool(router: &Router, connections: usize) -> std::io::Result<Vec<Connection>> {
    let mut pool = Vec::with_capacity(connections);
    for id in 0..connections {
        let mut connection = Connection::try_open(router.address, id, router.session).await?;
        connection.prepare_replays().await;
        pool.push(connection);
    }
    Ok(pool)
}

/// Why the pools of `routers` could not all be opened, or them.
async fn open_pools(
    routers: &[&Router],
    connections: usize,
) -> Result<Vec<Vec<Connection>>, String> {
    let opening = async {
        let mut pools = Vec::with_capacity(routers.len());
        for router in routers {
            let pool = open_pool(router, connections)
                .await
                .map_err(|error| format!("{}: a connection failed: {error}", router.name))?;
            pools.push(pool);
        }
        Ok(pools)
    };
    tokio::time::timeout(OPENING, opening)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the routers did not accept {connections} connections each within {OPENING:?} \
             (out of file descriptors?)"
            ))
        })
}

/// Prints the table: `levels` connection counts, `rounds` interleaved rounds of `length` per
/// router at each.
pub async fn measure(routers: &[Router], levels: &[usize], rounds: usize, length: Duration) {
    let only = std::env::var("IDEM_BENCH_ONLY").unwrap_or_default();
    let compared: Vec<&Router> = COMPARED
        .iter()
        .filter(|name| format!("{name} replayed").contains(&only))
        .filter_map(|name| routers.iter().find(|router| router.name == *name))
        .collect();
    if compared.is_empty() {
        return;
    }
    println!(
        "\n#### Replays by connections\n\nReplayed keys only; {rounds} interleaved rounds of {} s per router at each count of keep-alive connections per router; p50 and p99 are medians over the rounds.\n",
        length.as_secs()
    );
    println!("| connections | router | requests/s (median) | p50 µs | p99 µs | idem-http / axum-idempotent, requests/s |");
    println!("|---:|---|---:|---:|---:|---:|");
    for &connections in levels {
        let pools = match too_few_files(compared.len(), connections) {
            Some(note) => Err(note),
            None => open_pools(&compared, connections).await,
        };
        let mut pools = match pools {
            Ok(pools) => {
                let mut warm = Vec::with_capacity(pools.len());
                for pool in pools {
                    warm.push(Some(load::phase(pool, Keys::Replayed, WARM_UP).await.1));
                }
                warm
            }
            Err(note) => {
                eprintln!("http_compare: {connections} connections not measured: {note}");
                println!("| {connections} | not measured: {note} | | | | |");
                continue;
            }
        };
        let mut measured: Vec<Vec<Measured>> = compared.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (pool, runs) in pools.iter_mut().zip(&mut measured) {
                let connections = pool.take().expect("a router's connections are back");
                let (run, connections) = load::phase(connections, Keys::Replayed, length).await;
                *pool = Some(connections);
                runs.push(run);
            }
        }
        drop(pools);
        let peer = compared.iter().position(|router| router.name == PEER);
        for (index, router) in compared.iter().enumerate() {
            let runs = &measured[index];
            let rate = median(&mut runs.iter().map(|run| run.rate).collect::<Vec<_>>());
            let micros = |fraction: f64| {
                median(
                    &mut runs
                        .iter()
                        .map(|run| run.percentile(fraction).as_secs_f64() * 1e6)
                        .collect::<Vec<_>>(),
                )
            };
            let over_peer = match peer {
                Some(peer) if peer != index => {
                    let mut ratios: Vec<f64> = runs
                        .iter()
                        .zip(&measured[peer])
                        .map(|(run, peer_run)| run.rate / peer_run.rate)
                        .collect();
                    format!("{:.2}x", median(&mut ratios))
                }
                _ => String::new(),
            };
            println!(
                "| {connections} | {} | {rate:.0} | {:.0} | {:.0} | {over_peer} |",
                router.name,
                micros(0.5),
                micros(0.99),
            );
        }
    }
}
