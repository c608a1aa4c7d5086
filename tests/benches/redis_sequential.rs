//! One caller at a time through the Redis store: first calls (a fresh key each) and replays of
//! one key, their median and 99th percentile latency, the round trips each made (counted by the
//! store) and the commands Redis ran for each (`INFO commandstats`, which counts the commands a
//! Lua script runs too), as one markdown table row each.
//!
//! ```text
//! cargo bench -p idem-tests --features redis --bench redis_sequential
//! ```
//!
//! `scripts/compare-powertools.sh` runs it next to Powertools for AWS Lambda's idempotency
//! utility on the same server (`IDEM_REDIS_URL`). `IDEM_BENCH_CALLS` sets how many calls of each
//! kind are timed (default 2 000, after a tenth of that to warm up).

use std::time::{Duration, Instant};

use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_stores::redis::client as redis;
use idem_stores::redis::RedisStore;
use idem_test_servers::redis::server::TestRedis;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Order {
    id: String,
    amount: u64,
}

fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, 1_000u64)).unwrap())
}

async fn create(idem: &Idempotency, order: &str) -> bool {
    let id = order.to_owned();
    idem.run(call(idem, order), async move {
        Ok::<_, Error>(Order { id, amount: 1_000 })
    })
    .await
    .unwrap()
    .replayed
}

/// Total calls of every command so far, from `INFO commandstats`.
async fn commands(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| {
            line.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Times `calls` runs of `op` after a tenth as many to warm up; the sorted latencies, the
/// store's round trips and the Redis commands per timed call.
async fn measure<F, Fut>(
    store: &RedisStore,
    conn: &mut redis::aio::MultiplexedConnection,
    calls: usize,
    mut op: F,
) -> (Vec<Duration>, f64, f64)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for n in 0..calls / 10 {
        op(n).await;
    }
    let before = commands(conn).await;
    let trips_before = store.round_trips();
    let mut times = Vec::with_capacity(calls);
    for n in calls / 10..calls / 10 + calls {
        let started = Instant::now();
        op(n).await;
        times.push(started.elapsed());
    }
    let trips = store.round_trips() - trips_before;
    let after = commands(conn).await;
    times.sort();
    let per_call = |n: u64| n as f64 / calls as f64;
    (times, per_call(trips), per_call(after - before))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls: usize = std::env::var("IDEM_BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let Some(server) = TestRedis::start() else {
        return;
    };
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let store = RedisStore::builder(client)
        .prefix("sequential:")
        .connect()
        .await
        .expect("the server accepts connections");
    let idem = Idempotency::new(store.clone());
    // Every run gets keys of its own, so that a rerun on the same server starts fresh.
    let run = std::process::id();

    let first = measure(&store, &mut conn, calls, |n| {
        let idem = idem.clone();
        async move {
            assert!(!create(&idem, &format!("order-{run}-{n}")).await);
        }
    })
    .await;
    let hot = format!("order-{run}-hot");
    create(&idem, &hot).await;
    let replay = measure(&store, &mut conn, calls, |_| {
        let (idem, hot) = (idem.clone(), hot.clone());
        async move {
            assert!(create(&idem, &hot).await);
        }
    })
    .await;
    for (what, (times, trips, commands)) in [("first call", first), ("replay", replay)] {
        println!(
            "| idem | {what} | {:.1?} | {:.1?} | {trips:.2} | {commands:.2} |",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
}
