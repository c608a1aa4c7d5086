//! Replays through the Redis store next to raw commands on the same connection, and next to
//! `redis-benchmark -t set` on the same server, in the same run.
//!
//! ```text
//! cargo bench -p idem-tests --features redis --bench redis_replay
//! ```
//!
//! Starts its own `redis-server` on a loopback port (or uses `IDEM_REDIS_URL`) and completes one
//! call. Then:
//!
//! - latency, one caller: an idem replay (one `SET ... NX GET`), a raw `HGETALL` of the record's
//!   hash twin, a raw `GET` of the record, a fresh idem call and a replay with a
//!   [`ReplayCache`], interleaved one after another on the connection the store uses,
//!   `IDEM_BENCH_CALLS` times each (default 5 000);
//! - throughput: 64 tasks replay it through one `RedisStore` (one multiplexed connection) for a
//!   few seconds, with and without the replay cache, next to 64 tasks sending the raw `HGETALL`
//!   and 64 sending the raw `GET`. `IDEM_BENCH_SECS` sets the length of each phase (default 5).
//!
//! The record is one string; the hash twin is a hash of the same fields, as the store's earlier
//! layout wrote the record, so that `HGETALL` of it stays the yardstick the goals are set
//! against, next to a raw `GET` of the record itself.
//!
//! The client runs on one Tokio worker thread, as `redis-benchmark` runs on one thread, so that
//! on a two-core machine client and server each have a core.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_core::{
    store::{Claim, InProgress, OwnerToken, Reservation, Store},
    Call, Clock, Error, Fingerprint, Idempotency, ReplayCache, SystemClock,
};
use idem_stores::redis::client as redis;
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::server::TestRedis;

const TASKS: usize = 64;

fn call(idem: &Idempotency) -> Call {
    order_call(idem, "order-42")
}

fn order_call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, 3, "blue")).unwrap())
}

fn order() -> Order {
    Order {
        id: "ord_1".into(),
        item: "blue widget".into(),
        quantity: 3,
        total_cents: 4_497,
    }
}

/// Latencies of one kind of call, in the order they were taken.
#[derive(Default)]
struct Latencies(Vec<Duration>);

impl Latencies {
    async fn time<Fut: std::future::Future<Output = ()>>(&mut self, op: Fut) {
        let started = Instant::now();
        op.await;
        self.0.push(started.elapsed());
    }

    /// The median and the 99th percentile, leaving out the first `skip` latencies.
    fn summary(self, skip: usize) -> (Duration, Duration) {
        let mut kept = self.0[skip..].to_vec();
        kept.sort();
        let at = |p: f64| kept[((kept.len() - 1) as f64 * p).round() as usize];
        (at(0.5), at(0.99))
    }
}

async fn replay_once(idem: &Idempotency) {
    let done = idem
        .run(call(idem), std::future::pending::<Result<Order, Error>>())
        .await
        .unwrap();
    assert!(done.replayed);
}

async fn hgetall_once(conn: &mut redis::aio::ConnectionManager, key: &str) {
    let _: redis::Value = redis::cmd("HGETALL")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap();
}

async fn get_once(conn: &mut redis::aio::ConnectionManager, key: &str) {
    let _: redis::Value = redis::cmd("GET").arg(key).query_async(conn).await.unwrap();
}

/// The hash twin of a completed record: the fields the store's earlier layout wrote in a hash,
/// taken from the record (`idm1C`, then five fields, each its length, `:` and its bytes:
/// fingerprint, owner, outcome, expires_at, body), so that it holds the record's bytes less the
/// framing. A record that does not read so goes whole into one field.
fn hash_twin(record: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    fn fields(record: &[u8]) -> Option<Vec<&[u8]>> {
        let mut rest = record.strip_prefix(b"idm1C")?;
        let mut fields = Vec::new();
        while !rest.is_empty() {
            let colon = rest.iter().position(|&b| b == b':')?;
            let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
            let end = (colon + 1).checked_add(len)?;
            fields.push(rest.get(colon + 1..end)?);
            rest = &rest[end..];
        }
        Some(fields)
    }
    match fields(record).as_deref() {
        Some([fingerprint, owner, outcome, expires_at, body]) => vec![
            ("state", b"completed".to_vec()),
            ("fingerprint", fingerprint.to_vec()),
            ("owner", owner.to_vec()),
            ("outcome", outcome.to_vec()),
            ("expires_at", expires_at.to_vec()),
            ("body", body.to_vec()),
        ],
        _ => vec![("record", record.to_vec())],
    }
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

    let calls: usize = std::env::var("IDEM_BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000);
    // The store and the raw commands share one multiplexed connection.
    let conn = redis::aio::ConnectionManager::new(redis::Client::open(url.as_str()).unwrap())
        .await
        .unwrap();
    let store = RedisStore::connection_builder(conn.clone())
        .prefix("bench:")
        .connect()
        .await
        .expect("the server accepts connections");
    let idem = Idempotency::new(store.clone());
    let cached =
        Idempotency::new(store.clone()).with_replay_cache(ReplayCache::new(10_000, 16 << 20));
    let first = idem
        .run(call(&idem), async { Ok::<_, Error>(order()) })
        .await
        .unwrap();
    assert!(!first.replayed);
    let raw_key = store.redis_key(call(&idem).key());
    let mut raw_conn = conn.clone();
    let record: Vec<u8> = redis::cmd("GET")
        .arg(&raw_key)
        .query_async(&mut raw_conn)
        .await
        .unwrap();
    let twin_key = "bench-hash-twin".to_owned();
    let twin = hash_twin(&record);
    let twin_bytes: usize = twin
        .iter()
        .map(|(field, value)| field.len() + value.len())
        .sum();
    let twin_fields = twin.len();
    let mut hset = redis::cmd("HSET");
    hset.arg(&twin_key);
    for (field, value) in &twin {
        hset.arg(*field).arg(value.as_slice());
    }
    let _: () = hset.query_async(&mut raw_conn).await.unwrap();

    // One caller: each kind of call in turn, so that all see the same conditions. The first
    // tenth warms up and is left out.
    let warm_up = calls / 10;
    let (mut replay_times, mut raw_times, mut get_times, mut fresh_times, mut cached_times) = (
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
        Latencies::default(),
    );
    for n in 0..warm_up + calls {
        replay_times.time(replay_once(&idem)).await;
        raw_times.time(hgetall_once(&mut raw_conn, &twin_key)).await;
        get_times.time(get_once(&mut raw_conn, &raw_key)).await;
        let fresh = order_call(&idem, &format!("fresh-{n}"));
        fresh_times
            .time(async {
                let done = idem
                    .run(fresh, async { Ok::<_, Error>(order()) })
                    .await
                    .unwrap();
                assert!(!done.replayed);
            })
            .await;
        cached_times.time(replay_once(&cached)).await;
    }
    let latency = [
        ("idem replay", replay_times.summary(warm_up)),
        (
            "idem fresh call (reserve, run, complete)",
            fresh_times.summary(warm_up),
        ),
        (
            "idem replay, replay cache on",
            cached_times.summary(warm_up),
        ),
        (
            "raw `HGETALL` of the record's hash twin",
            raw_times.summary(warm_up),
        ),
        ("raw `GET` of the record", get_times.summary(warm_up)),
    ];

    let replay = {
        let idem = idem.clone();
        move || {
            let idem = idem.clone();
            async move { replay_once(&idem).await }
        }
    };
    let cached_replay = {
        let cached = cached.clone();
        move || {
            let cached = cached.clone();
            async move { replay_once(&cached).await }
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
        let fingerprint = *call(&idem).fingerprint().unwrap();
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
    let cached_replays = per_second(throughput(secs, cached_replay).await);

    let hgetall = {
        let conn = conn.clone();
        move || {
            let (mut conn, key) = (conn.clone(), twin_key.clone());
            async move { hgetall_once(&mut conn, &key).await }
        }
    };
    let raw = per_second(throughput(secs, hgetall).await);
    let get = move || {
        let (mut conn, key) = (conn.clone(), raw_key.clone());
        async move { get_once(&mut conn, &key).await }
    };
    let raw_get = per_second(throughput(secs, get).await);

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
                ["evalsha", "set", "get", "hgetall"]
                    .iter()
                    .any(|name| line.starts_with(&format!("cmdstat_{name}:")))
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
        "record: one string of {} bytes; its hash twin: {twin_bytes} bytes in {twin_fields} fields",
        record.len()
    );
    println!(
        "phase length: {secs:?}; {TASKS} concurrent tasks on one worker thread; round trips per replay: {trips:.3}"
    );
    println!();
    println!(
        "#### Redis latency, one caller, {calls} calls of each kind interleaved on one connection"
    );
    println!();
    let raw_median = latency[3].1 .0.as_secs_f64();
    let get_median = latency[4].1 .0.as_secs_f64();
    println!("| what | p50 | p99 | p50 × raw `HGETALL` | p50 × raw `GET` |");
    println!("|---|---|---|---|---|");
    let ratio_of = |row: usize| latency[row].1 .0.as_secs_f64() / raw_median;
    let (replay, fresh) = (ratio_of(0), ratio_of(1));
    for (name, (median, p99)) in latency {
        println!(
            "| {name} | {median:.1?} | {p99:.1?} | {:.2}× | {:.2}× |",
            median.as_secs_f64() / raw_median,
            median.as_secs_f64() / get_median
        );
    }
    println!();
    println!("#### Goals on Redis (raw `HGETALL` p50 at {raw_median:.1e} s: the loopback level of this run)");
    println!();
    println!("| goal | measured | verdict |");
    println!("|---|---|---|");
    for (goal, ratio, most) in [
        ("Redis replay p50 ≤ 1.1× a raw command", replay, 1.1),
        ("Redis fresh call p50 ≤ 2.4× a raw command", fresh, 2.4),
    ] {
        let verdict = if ratio <= most {
            "met".to_owned()
        } else {
            format!("short by {:.2}×", ratio - most)
        };
        println!("| {goal} | {ratio:.2}× | {verdict} |");
    }
    println!();
    println!("#### Redis throughput, {TASKS} concurrent callers");
    println!();
    println!("| what | connections | ops/s | × raw `HGETALL` | × raw `GET` |");
    println!("|---|---|---|---|---|");
    let row = |what: &str, connections: u32, rate: f64| {
        println!(
            "| {what} | {connections} | {rate:.0} | {:.2}× | {:.2}× |",
            rate / raw,
            rate / raw_get
        );
    };
    row(
        "idem replay: `Idempotency::run` on `RedisStore` (one `SET ... NX GET`)",
        1,
        replays,
    );
    row("idem replay, replay cache on", 1, cached_replays);
    row(
        "`RedisStore::reserve` alone, finding the record",
        1,
        reserves,
    );
    row(
        "raw `HGETALL` of the record's hash twin, same client library",
        1,
        raw,
    );
    row("raw `GET` of the record, same client library", 1, raw_get);
    match benchmark {
        Some((command, rate)) => row(&format!("`{command}`"), 64, rate),
        None => {
            println!("| redis-benchmark -t set -c 64 | 64 | (redis-benchmark not found) | | |")
        }
    }
}
