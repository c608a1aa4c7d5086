//! Replays per second through the Redis store, next to `redis-benchmark -t set` on the same
//! server in the same run.
//!
//! ```text
//! cargo bench -p idem-tests --features redis --bench redis_replay
//! ```
//!
//! Starts its own `redis-server` on a loopback port (or uses `IDEM_REDIS_URL`), completes one
//! call, then has 64 tasks replay it through one `RedisStore` (one multiplexed connection) for
//! a few seconds. `IDEM_BENCH_SECS` sets the length of each phase (default 5).
//!
//! The client runs on one Tokio worker thread, as `redis-benchmark` runs on one thread, so that
//! on a two-core machine client and server each have a core.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_core::{
    Call, Claim, Clock, Error, Fingerprint, Idempotency, InProgress, OwnerToken, Reservation,
    Store, SystemClock,
};
use idem_stores::redis::client as redis;
use idem_stores::redis::RedisStore;
use idem_tests::redis_server::TestRedis;

const TASKS: usize = 64;

fn call(idem: &Idempotency) -> Call {
    let key = idem.key("orders.create").part("order-42").finish().unwrap();
    Call::new(key, Fingerprint::of(&("order-42", 3, "blue")).unwrap())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Order {
    id: String,
    item: String,
    quantity: u32,
    total_cents: u64,
}

/// Runs `op` in `TASKS` tasks for `secs`; returns how many ran and how long it took.
async fn throughput<F, Fut>(secs: Duration, op: F) -> (u64, Duration)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (op, stop, done) = (op.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    op().await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(secs).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    (done.load(Ordering::Relaxed), started.elapsed())
}

fn per_second((count, elapsed): (u64, Duration)) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

/// `redis-benchmark -t set -c 64` against the same server; its requests per second.
fn redis_benchmark(host: &str, port: &str, requests: u64) -> Option<(String, f64)> {
    let args = [
        "-h",
        host,
        "-p",
        port,
        "-t",
        "set",
        "-c",
        "64",
        "-n",
        &requests.to_string(),
        "-q",
    ];
    let output = Command::new("redis-benchmark").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    // "SET: 81234.56 requests per second, p50=0.391 msec" (after \r progress lines).
    let line = text.rsplit('\r').next()?.trim().to_owned();
    let rate = line
        .split_once(':')?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((format!("redis-benchmark {}", args.join(" ")), rate))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let secs = Duration::from_secs(
        std::env::var("IDEM_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
    );
    let Some(redis) = TestRedis::start() else {
        return;
    };
    let url = redis.url().to_owned();
    let authority = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let (host, port) = authority.rsplit_once(':').unwrap_or((&authority, "6379"));

    let store = RedisStore::builder(redis::Client::open(url.as_str()).unwrap())
        .prefix("bench:")
        .connect()
        .await
        .expect("the server accepts connections");
    let idem = Idempotency::new(store.clone());
    let first = idem
        .run(call(&idem), async {
            Ok::<_, Error>(Order {
                id: "ord_1".into(),
                item: "blue widget".into(),
                quantity: 3,
                total_cents: 4_497,
            })
        })
        .await
        .unwrap();
    assert!(!first.replayed);

    let replay = {
        let idem = idem.clone();
        move || {
            let idem = idem.clone();
            async move {
                let done = idem
                    .run(call(&idem), std::future::pending::<Result<Order, Error>>())
                    .await
                    .unwrap();
                assert!(done.replayed);
            }
        }
    };
    // Warm up, then measure.
    throughput(Duration::from_millis(500), replay.clone()).await;
    let trips_before = store.round_trips();
    let measured = throughput(secs, replay).await;
    let trips = (store.round_trips() - trips_before) as f64 / measured.0 as f64;
    let replays = per_second(measured);

    let reserve = {
        let (store, key) = (store.clone(), call(&idem).key().clone());
        let fingerprint = *call(&idem).fingerprint();
        move || {
            let (store, key) = (store.clone(), key.clone());
            async move {
                let now = SystemClock.now();
                let lease_until = now + Duration::from_secs(30);
                let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
                    .with_fencing_token(now.as_millis() * 1000);
                let claim = Claim::new(record, now);
                let found = store.reserve(&key, &claim).await.unwrap();
                assert!(matches!(found, Reservation::Existing(_)));
            }
        }
    };
    let reserves = per_second(throughput(secs, reserve).await);

    let raw_key = store.redis_key(call(&idem).key());
    let conn = redis::aio::ConnectionManager::new(redis::Client::open(url.as_str()).unwrap())
        .await
        .unwrap();
    let hgetall = move || {
        let (mut conn, key) = (conn.clone(), raw_key.clone());
        async move {
            let _: redis::Value = redis::cmd("HGETALL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    };
    let raw = per_second(throughput(secs, hgetall).await);

    let server_cost = {
        let mut conn = redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await
            .unwrap();
        info.lines()
            .filter(|line| {
                line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_hgetall:")
            })
            .map(|line| {
                let (name, stats) = line.trim_start_matches("cmdstat_").split_once(':').unwrap();
                let usec = stats
                    .split(',')
                    .find_map(|kv| kv.strip_prefix("usec_per_call="))
                    .unwrap_or("?");
                format!("{name} {usec} µs")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };

    let requests = (replays * secs.as_secs_f64()).max(100_000.0) as u64;
    let benchmark = redis_benchmark(host, port, requests);

    println!();
    println!(
        "server: {url} (redis-server on loopback; client and server share this machine's cores)"
    );
    println!("server time per call (INFO commandstats): {server_cost}");
    println!(
        "phase length: {secs:?}; {TASKS} concurrent tasks on one worker thread; round trips per replay: {trips:.3}"
    );
    println!();
    println!("| what | connections | ops/s |");
    println!("|---|---|---|");
    println!(
        "| idem replay: `Idempotency::run` on `RedisStore` (EVALSHA reserve) | 1 | {replays:.0} |"
    );
    println!("| `RedisStore::reserve` alone, finding the record | 1 | {reserves:.0} |");
    println!("| raw `HGETALL` of the record, same client library | 1 | {raw:.0} |");
    match benchmark {
        Some((command, rate)) => println!("| `{command}` | 64 | {rate:.0} |"),
        None => println!("| redis-benchmark -t set -c 64 | 64 | (redis-benchmark not found) |"),
    }
}
