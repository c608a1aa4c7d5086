//! Times calls on the memory store with no metrics recorder and no tracing subscriber, as a
//! program that does not export telemetry runs them: built with idem's metrics and spans
//! compiled in and compiled out by `scripts/bench-telemetry.sh`, which compares them side by
//! side.
//!
//! Prints one line per case: its name and the median nanoseconds per call over the batches.
//! With `IDEM_REDIS_URL` set, the replay and the fresh call on that Redis too.

use std::time::Instant;

use idem_core::{Call, Error, Fingerprint, Idempotency, ReplayCache};
use idem_stores::memory::MemoryStore;
use idem_stores::redis::RedisStore;

const BATCHES: usize = 15;

fn call(idem: &Idempotency, id: usize) -> Call {
    let key = idem
        .key("bench.charge")
        .part(&id.to_string())
        .finish()
        .unwrap();
    Call::new(key, Fingerprint::of(&id).unwrap())
}

/// The median over the batches of the nanoseconds a call of `calls` takes.
async fn median_ns(
    idem: &Idempotency,
    per_batch: usize,
    calls: impl Fn(usize, usize) -> usize,
) -> f64 {
    let mut per_call = Vec::with_capacity(BATCHES);
    for batch in 0..BATCHES {
        let prepared: Vec<Call> = (0..per_batch)
            .map(|i| call(idem, calls(batch, i)))
            .collect();
        let started = Instant::now();
        for call in prepared {
            idem.run(call, async { Ok::<_, Error>(7u64) })
                .await
                .unwrap();
        }
        per_call.push(started.elapsed().as_nanos() as f64 / per_batch as f64);
    }
    per_call.sort_by(f64::total_cmp);
    per_call[BATCHES / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = || MemoryStore::builder().no_sweeping().build();
        let idem = Idempotency::new(store());
        const CALLS: usize = 20_000;
        let fresh = median_ns(&idem, CALLS, |batch, i| 1_000_000 + batch * CALLS + i).await;
        let replay = median_ns(&idem, CALLS, |_, i| i % 64).await;
        let cached = Idempotency::new(store()).with_replay_cache(ReplayCache::new(1_000, 1 << 20));
        let cached_replay = median_ns(&cached, CALLS, |_, i| i % 64).await;
        println!("fresh {fresh:.1}");
        println!("replay {replay:.1}");
        println!("cached_replay {cached_replay:.1}");
        if let Ok(url) = std::env::var("IDEM_REDIS_URL") {
            const ROUND_TRIPS: usize = 1_000;
            let redis = RedisStore::connect(&url).await.unwrap();
            let idem =
                Idempotency::new(redis).with_namespace(format!("bench-{}", std::process::id()));
            let fresh = median_ns(&idem, ROUND_TRIPS, |batch, i| {
                1_000_000 + batch * ROUND_TRIPS + i
            })
            .await;
            let replay = median_ns(&idem, ROUND_TRIPS, |_, i| i % 64).await;
            println!("redis_fresh {fresh:.1}");
            println!("redis_replay {replay:.1}");
        }
    });
}
