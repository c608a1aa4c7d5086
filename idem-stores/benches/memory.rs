//! The cost of idempotency on the memory store, next to a plain call of the same function.
//!
//! `cargo bench -p idem-stores --bench memory`

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use idem_core::{Call, Error, Fingerprint, Idempotency};
use idem_stores::memory::MemoryStore;
use serde::{Deserialize, Serialize};

/// A request that serialises to about 200 bytes, like a small payment API body.
#[derive(Serialize)]
struct ChargeRequest {
    order_id: String,
    customer_id: String,
    card_token: String,
    amount: u64,
    currency: &'static str,
    description: String,
}

#[derive(Serialize, Deserialize)]
struct Receipt {
    id: String,
    amount: u64,
}

fn request(order: u64) -> ChargeRequest {
    ChargeRequest {
        order_id: format!("order-{order:012}"),
        customer_id: "cus_4f9a1c2e7b3d5a60".into(),
        card_token: "tok_visa_4242424242424242_exp_2030_12".into(),
        amount: 4_200,
        currency: "JPY",
        description: "Monthly subscription, premium plan, billed on the 1st".into(),
    }
}

async fn charge(req: &ChargeRequest) -> Result<Receipt, Error> {
    Ok(Receipt {
        id: format!("rcpt_{}", req.order_id),
        amount: req.amount,
    })
}

async fn idempotent_charge(idem: &Idempotency, req: &ChargeRequest) -> Result<Receipt, Error> {
    let key = idem
        .key("bench::charge")
        .part(req.order_id.as_str())
        .finish()?;
    let call = Call::new(key, Fingerprint::of(req)?).with_ttl(Duration::from_secs(1));
    Ok(idem.run(call, charge(req)).await?.value)
}

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
        .block_on(idempotent_charge(&idem, &replayed))
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
            idempotent_charge(&idem, &req).await.unwrap()
        })
    });
    group.bench_function("replay", |b| {
        b.to_async(&runtime).iter(|| async {
            let req = request(0);
            idempotent_charge(&idem, &req).await.unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
