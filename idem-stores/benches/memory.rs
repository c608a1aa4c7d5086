//! The cost of idempotency on the memory store, next to a plain call of the same function.
//!
//! `cargo bench -p idem-stores --bench memory`

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use idem_core::Idempotency;
use idem_stores::memory::MemoryStore;

mod charge;
use charge::{charge, idempotent_charge, request};

/// How long a charge's outcome is kept.
const TTL: Duration = Duration::from_secs(1);

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let idem = Idempotency::new(MemoryStore::new());
    let size = serde_json::to_vec(&request(0)).unwrap().len();
    let mut group = c.benchmark_group(format!("memory store, {size}-byte request"));

    let replayed = request(0);
    runtime
        .block_on(idempotent_charge(&idem, &replayed, TTL))
        .unwrap();
    let next_order = AtomicU64::new(1);

    group.bench_function("plain call", |b| {
        b.to_async(&runtime).iter(|| async {
            let req = request(next_order.fetch_add(1, Ordering::Relaxed));
            charge(&req).await.unwrap()
        })
    });
    group.bench_function("fresh idempotent call", |b| {
        b.to_async(&runtime).iter(|| async {
            let req = request(next_order.fetch_add(1, Ordering::Relaxed));
            idempotent_charge(&idem, &req, TTL).await.unwrap()
        })
    });
    group.bench_function("replay", |b| {
        b.to_async(&runtime).iter(|| async {
            let req = request(0);
            idempotent_charge(&idem, &req, TTL).await.unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
