//! What sealing costs: fresh calls and replays of a 1 KiB outcome with sealing and key digests
//! on, against the same store without, interleaved in one run.
//!
//! ```text
//! cargo bench -p idem-tests --features redis,seal --bench sealing
//! ```
//!
//! On the memory store (where the difference is sealing itself) and on Redis on a loopback
//! server started here (where it sits next to a round trip). `IDEM_BENCH_CALLS` sets the calls
//! of each kind per round (default 2 000); five rounds, the median of each printed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use idem_core::{store::Store, Call, Error, Fingerprint, Idempotency};
use idem_stores::memory::MemoryStore;
use idem_test_servers::redis::target::RedisTarget;
use idem_tests::sealed::{keyring, KEY_DIGEST_SECRET};

const ROUNDS: usize = 5;

fn outcome() -> String {
    "x".repeat(1024)
}

fn call(idem: &Idempotency, order: usize) -> Call {
    let key = idem.key("orders.create").part(&order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap())
}

/// Nanoseconds per fresh call and per replay through `idem`, over `calls` of each.
async fn measure(idem: &Idempotency, first_order: usize, calls: usize) -> (f64, f64) {
    let started = Instant::now();
    for order in first_order..first_order + calls {
        let done = idem
            .run(call(idem, order), async { Ok::<_, Error>(outcome()) })
            .await
            .unwrap();
        assert!(!done.replayed);
    }
    let fresh = started.elapsed();
    let started = Instant::now();
    for order in first_order..first_order + calls {
        let done = idem
            .run(call(idem, order), async { Ok::<_, Error>(outcome()) })
            .await
            .unwrap();
        assert!(done.replayed);
    }
    let replay = started.elapsed();
    let per = |total: Duration| total.as_nanos() as f64 / calls as f64;
    (per(fresh), per(replay))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Plain and sealed handles on `store`, measured in turn, round after round.
async fn compare(name: &str, store: Arc<dyn Store>, calls: usize) {
    let plain = Idempotency::from_arc(store.clone());
    let sealed = Idempotency::from_arc(store)
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let (mut plain_times, mut sealed_times) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        plain_times.push(measure(&plain, round * 2 * calls, calls).await);
        sealed_times.push(measure(&sealed, (round * 2 + 1) * calls, calls).await);
    }
    for (kind, pick) in [
        (
            "fresh call",
            (|t: &(f64, f64)| t.0) as fn(&(f64, f64)) -> f64,
        ),
        ("replay", |t: &(f64, f64)| t.1),
    ] {
        let plain = median(plain_times.iter().map(pick).collect());
        let sealed = median(sealed_times.iter().map(pick).collect());
        println!(
            "| {name} | {kind} | {plain:.0} | {sealed:.0} | {:.2}× | {:.1} |",
            sealed / plain,
            (sealed - plain) / 1000.0
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let calls = std::env::var("IDEM_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    println!("### Sealing a 1 KiB outcome, ns per call (median of {ROUNDS} rounds of {calls})\n");
    println!("| store | call | plain | sealed + key digest | sealed / plain | µs added |");
    println!("|---|---|---|---|---|---|");
    compare("memory", Arc::new(MemoryStore::new()), calls).await;
    if let Some(redis) = RedisTarget::on_owned().await {
        compare("Redis", Arc::new(redis.redis_store().clone()), calls).await;
    }
}
