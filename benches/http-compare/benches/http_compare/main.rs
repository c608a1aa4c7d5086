//! Requests per second through idem-http, through `axum-idempotent` 0.6 (the best-known Rust
//! peer) and through no layer at all: one axum app, one no-work handler, real HTTP on loopback;
//! and the same app on actix-web, with idem-http's middleware and without it.
//!
//! ```text
//! cargo bench --manifest-path benches/http-compare/Cargo.toml
//! ```
//!
//! The routers run on a server runtime of two worker threads; the load comes from keep-alive
//! HTTP/1.1 connections to each router (hyper's own client, on one thread of its own), each
//! sending a small JSON POST after another: with a new `Idempotency-Key` per request (the
//! handler runs, its response is kept) or with the connection's own key answered once before
//! (every request a replay). `IDEM_BENCH_CONNECTIONS` lists the counts of connections per
//! router (default `32,128,512`): the main table runs with the first; a second table, of
//! replayed keys only, compares idem-http on the memory store (with and without its replay
//! cache) with the peer at each (requests per second, p50 and p99 latency). Each connection is
//! two open files of this process: a count the soft limit on open files cannot hold is
//! reported as not measured, with the limit it needs.
//!
//! `IDEM_BENCH_ROUNDS` rounds (default 3) of every phase run interleaved, each phase
//! `IDEM_BENCH_SECS` long (default 3); ratios are taken within a round, and the tables show
//! their medians, with the load average during each round. `IDEM_BENCH_ONLY=replayed` (or any
//! text) keeps the phases whose router and keys name it, beside the plain router: for profiling.
//!
//! The peer does less than idem-http: no reservation (concurrent duplicates all run the
//! handler), no fingerprint of the body, and it keeps responses only inside a client's session,
//! which each connection opens once before it starts. idem-http on Redis runs when a
//! `redis-server` can be started on a free loopback port; the peer's Redis store needs Redis 7.4
//! (`HEXPIRE`), so it is compared on its in-memory store only.

mod actix;
mod connections;
mod limits;
mod load;
mod routers;

use std::net::SocketAddr;
use std::time::Duration;

use idem_core::{store::OwnerToken, Idempotency, ReplayCache};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use idem_stores::redis::{client as redis, RedisStore};
use idem_test_servers::redis::server::TestRedis;
use limits::too_few_files;
use load::{Connection, Keys};

/// One router under test.
struct Router {
    name: &'static str,
    address: SocketAddr,
    /// Whether its clients open a session first (`axum-idempotent` keeps nothing otherwise).
    session: bool,
    /// Whether it keeps responses, so that a replay phase means something.
    replays: bool,
    /// The router without any layer on the same framework, that this one is compared with.
    baseline: &'static str,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The counts of connections per router of `IDEM_BENCH_CONNECTIONS`, the main table's first.
fn connection_counts() -> Vec<usize> {
    let listed = std::env::var("IDEM_BENCH_CONNECTIONS").unwrap_or_default();
    let counts: Vec<usize> = listed
        .split(',')
        .filter(|count| !count.trim().is_empty())
        .map(|count| {
            count.trim().parse().expect(
                "IDEM_BENCH_CONNECTIONS lists counts of connections per router, e.g. 32,128,512",
            )
        })
        .filter(|&count| count > 0)
        .collect();
    if counts.is_empty() {
        vec![32, 128, 512]
    } else {
        counts
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Starts every router on the server runtime; the Redis server, when one runs, is returned
/// to be kept alive.
fn start(server: &tokio::runtime::Runtime) -> (Vec<Router>, Option<TestRedis>) {
    let redis_server = TestRedis::start();
    server.block_on(async {
        let router = |name, address, session, replays| Router {
            name,
            address,
            session,
            replays,
            baseline: "no layer",
        };
        let on_actix = |name, address, replays| Router {
            name,
            address,
            session: false,
            replays,
            baseline: "actix-web, no layer",
        };
        let mut list = vec![
            router(
                "no layer",
                routers::serve(routers::plain()).await,
                false,
                false,
            ),
            router(
                "idem-http, memory",
                routers::serve(routers::idem_http(Idempotency::new(MemoryStore::new()))).await,
                false,
                true,
            ),
            router(
                "idem-http, memory, replay cache",
                routers::serve(routers::idem_http(
                    Idempotency::new(MemoryStore::new())
                        .with_replay_cache(ReplayCache::new(100_000, 64 << 20)),
                ))
                .await,
                false,
                true,
            ),
            router(
                "axum-idempotent, memory (moka)",
                routers::serve(routers::axum_idempotent()).await,
                true,
                true,
            ),
            on_actix("actix-web, no layer", actix::plain(), false),
            on_actix(
                "actix-web + idem-http, memory",
                actix::idem_http(IdempotencyLayer::new(Idempotency::new(MemoryStore::new()))),
                true,
            ),
        ];
        if let Some(redis_server) = &redis_server {
            let store = RedisStore::builder(redis::Client::open(redis_server.url()).unwrap())
                // A prefix of this run's own, on a server that earlier runs may have used.
                .prefix(format!(
                    "bench-compare-{}:",
                    OwnerToken::generate().as_str()
                ))
                .connect()
                .await
                .expect("the Redis server accepts connections");
            let address = routers::serve(routers::idem_http(Idempotency::new(store))).await;
            list.push(router("idem-http, Redis", address, false, true));
        }
        (list, redis_server)
    })
}

fn main() {
    let rounds = env_number("IDEM_BENCH_ROUNDS", 3).max(1) as usize;
    let counts = connection_counts();
    let length = Duration::from_secs(env_number("IDEM_BENCH_SECS", 3).max(1));
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a server runtime");
    let (routers, _redis_server) = start(&server);
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a client runtime");
    client.block_on(async {
        match too_few_files(routers.len(), counts[0]) {
            None => measure(&routers, counts[0], rounds, length).await,
            Some(note) => {
                eprintln!("http_compare: the main table is not measured: {note}");
                println!("\nThe main table is not measured: {note}");
            }
        }
        connections::measure(&routers, &counts, rounds, length).await;
    });
}

async fn measure(routers: &[Router], connections: usize, rounds: usize, length: Duration) {
    let mut phases: Vec<(usize, Keys)> = Vec::new();
    let mut pools = Vec::new();
    for (index, router) in routers.iter().enumerate() {
        let mut pool = Vec::with_capacity(connections);
        for id in 0..connections {
            pool.push(Connection::open(router.address, id, router.session).await);
        }
        // Warms the connections and code paths up.
        let (_, mut pool) = load::phase(pool, Keys::Fresh, Duration::from_millis(300)).await;
        phases.push((index, Keys::Fresh));
        if router.replays {
            for connection in &mut pool {
                connection.prepare_replays().await;
            }
            phases.push((index, Keys::Replayed));
        }
        pools.push(Some(pool));
    }
    if let Ok(only) = std::env::var("IDEM_BENCH_ONLY") {
        phases.retain(|&(router, keys)| {
            routers[router].name == routers[router].baseline
                || format!("{} {}", routers[router].name, keys_name(keys)).contains(&only)
        });
    }
    let mut rates = vec![Vec::with_capacity(rounds); phases.len()];
    let mut loads = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        for (phase, &(router, keys)) in phases.iter().enumerate() {
            let pool = pools[router]
                .take()
                .expect("a router's connections are back");
            let (measured, pool) = load::phase(pool, keys, length).await;
            pools[router] = Some(pool);
            rates[phase].push(measured.rate);
        }
        loads.push(load_average());
    }
    report(routers, connections, &phases, &rates, &loads, length);
}

fn keys_name(keys: Keys) -> &'static str {
    match keys {
        Keys::Fresh => "new per request",
        Keys::Replayed => "replayed",
    }
}

fn report(
    routers: &[Router],
    connections: usize,
    phases: &[(usize, Keys)],
    rates: &[Vec<f64>],
    loads: &[String],
    length: Duration,
) {
    let rounds = loads.len();
    let find = |name: &str, keys: Keys| {
        phases.iter().position(|&(router, phase_keys)| {
            routers[router].name == name
                && std::mem::discriminant(&phase_keys) == std::mem::discriminant(&keys)
        })
    };
    // The median over rounds of one phase's rate divided by another's, in the same round.
    let ratio = |phase: usize, reference: usize| {
        let mut ratios: Vec<f64> = (0..rounds)
            .map(|round| rates[phase][round] / rates[reference][round])
            .collect();
        median(&mut ratios)
    };

    println!(
        "\n{connections} keep-alive connections per router, {rounds} interleaved rounds of {} s per phase, POST /payments on loopback; load average (1 min) after each round: {}\n",
        length.as_secs(),
        loads.join(", ")
    );
    println!(
        "| router | keys | requests/s (median) | vs no layer, same framework | vs axum-idempotent, same keys |"
    );
    println!("|---|---|---:|---:|---:|");
    for (phase, &(router, keys)) in phases.iter().enumerate() {
        let plain =
            find(routers[router].baseline, Keys::Fresh).expect("every baseline is measured");
        let peer = find("axum-idempotent, memory (moka)", keys)
            .filter(|_| routers[router].name.starts_with("idem-http"))
            .map_or_else(
                || "".to_owned(),
                |peer| format!("{:.2}x", ratio(phase, peer)),
            );
        let keys = keys_name(keys);
        let mut round_rates = rates[phase].clone();
        println!(
            "| {} | {keys} | {:.0} | {:.2}x | {peer} |",
            routers[router].name,
            median(&mut round_rates),
            ratio(phase, plain),
        );
    }
    let goals = [
        (
            "HTTP replay, idem-http / axum-idempotent, memory, ≥ 1.2×",
            ("idem-http, memory", Keys::Replayed),
            ("axum-idempotent, memory (moka)", Keys::Replayed),
            1.2,
        ),
        (
            "HTTP replay, idem-http with its replay cache / axum-idempotent, ≥ 1.5×",
            ("idem-http, memory, replay cache", Keys::Replayed),
            ("axum-idempotent, memory (moka)", Keys::Replayed),
            1.5,
        ),
        (
            "HTTP new key, idem-http / axum-idempotent, memory, ≥ 1.0×",
            ("idem-http, memory", Keys::Fresh),
            ("axum-idempotent, memory (moka)", Keys::Fresh),
            1.0,
        ),
        (
            "HTTP new key, idem-http / no layer, memory, ≥ 0.6×",
            ("idem-http, memory", Keys::Fresh),
            ("no layer", Keys::Fresh),
            0.6,
        ),
    ];
    println!("\n#### Goals of the HTTP layer\n");
    println!("| goal | measured | verdict |");
    println!("|---|---|---|");
    for (goal, (name, keys), (reference, reference_keys), least) in goals {
        let (Some(phase), Some(reference)) = (find(name, keys), find(reference, reference_keys))
        else {
            println!("| {goal} | not measured in this run | |");
            continue;
        };
        let measured = ratio(phase, reference);
        let verdict = if measured >= least {
            "met".to_owned()
        } else {
            format!("short by {:.2}×", least - measured)
        };
        println!("| {goal} | {measured:.2}× | {verdict} |");
    }
}
