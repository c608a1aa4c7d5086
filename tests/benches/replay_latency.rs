//! The latency of one replay (a reserve that finds the completed record), one caller at a
//! time, through the Redis store and the PostgreSQL store on this machine in the same run,
//! each on a server started here on a loopback port.
//!
//! ```text
//! cargo bench -p idem-tests --features redis,postgres --bench replay_latency
//! ```
//!
//! `IDEM_BENCH_REPLAYS` sets how many replays each store makes (default 5 000, after 500 to
//! warm up). Prints the median and the 99th percentile, and PostgreSQL's as a multiple of
//! Redis's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency};
use idem_test_servers::postgres::TestPg;
use idem_test_servers::redis::target::RedisTarget;

const WARM_UP: usize = 500;

fn call(idem: &Idempotency) -> Call {
    let key = idem.key("orders.create").part("order-42").finish().unwrap();
    Call::new(key, Fingerprint::of(&("order-42", 3, "blue")).unwrap())
}

/// The replay latencies through `store`, sorted.
async fn replays(store: Arc<dyn Store>, count: usize) -> Vec<Duration> {
    let idem = Idempotency::new(store);
    let first = idem
        .run(call(&idem), async { Ok::<_, Error>("order 42".to_owned()) })
        .await
        .unwrap();
    assert!(!first.replayed);
    let mut latencies = Vec::with_capacity(count);
    for n in 0..WARM_UP + count {
        let started = Instant::now();
        let done = idem
            .run(call(&idem), async { Ok::<_, Error>("again".to_owned()) })
            .await
            .unwrap();
        assert!(done.replayed);
        if n >= WARM_UP {
            latencies.push(started.elapsed());
        }
    }
    latencies.sort();
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let count = std::env::var("IDEM_BENCH_REPLAYS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let Some(redis) = RedisTarget::on_owned().await else {
            return;
        };
        let Some(postgres) = TestPg::start_owned().await else {
            return;
        };
        let redis_store: Arc<dyn Store> = Arc::new(redis.redis_store().clone());
        let redis_times = replays(redis_store, count).await;
        let postgres_times = replays(postgres.store.clone(), count).await;
        let (redis_median, redis_p99) = (
            percentile(&redis_times, 0.5),
            percentile(&redis_times, 0.99),
        );
        let (postgres_median, postgres_p99) = (
            percentile(&postgres_times, 0.5),
            percentile(&postgres_times, 0.99),
        );
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!("replay latency, {count} sequential replays each");
        println!("| store | median | p99 |");
        println!("|---|---|---|");
        println!("| Redis | {redis_median:?} | {redis_p99:?} |");
        println!("| PostgreSQL | {postgres_median:?} | {postgres_p99:?} |");
        println!(
            "| PostgreSQL / Redis | {:.2}x | {:.2}x |",
            ratio(postgres_median, redis_median),
            ratio(postgres_p99, redis_p99)
        );
    });
}
