//! What the layer costs a request in the process, without a network: an axum app called as a
//! tower service, with no layer and with `IdempotencyLayer` on the memory store, replays and
//! new keys, each timed in interleaved rounds; medians per request.
//!
//! ```text
//! cargo bench -p idem-http --bench layer_overhead
//! ```
//!
//! The HTTP comparison (`benches/http-compare`) measures the same layer through hyper on
//! loopback, where the server shares the machine's cores with its load; this is the layer's
//! own share of that.

use std::time::Instant;

use axum::{body::Body, http::Request, routing::post, Router};
use idem_core::{Idempotency, ReplayCache};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tower_service::Service;

const ROUNDS: usize = 7;
const REQUESTS_PER_ROUND: u32 = 20_000;
const BODY: &str =
    r#"{"order_id":"order-000000000042","amount":4200,"currency":"JPY","card":"tok_visa_4242"}"#;

async fn create_payment(body: String) -> String {
    format!("charged {} bytes", body.len())
}

fn request(key: &str) -> Request<Body> {
    Request::post("/payments")
        .header("idempotency-key", key)
        .header("authorization", "Bearer client-7f3a9c2e")
        .header("content-type", "application/json")
        .body(Body::from(BODY))
        .expect("a request")
}

/// Nanoseconds per request of `app`, the request's key from `key`, the response read whole.
async fn per_request(app: &Router, key: impl Fn(u32) -> String) -> f64 {
    let started = Instant::now();
    for n in 0..REQUESTS_PER_ROUND {
        let response = app.clone().call(request(&key(n))).await.expect("an answer");
        assert!(response.status().is_success(), "{}", response.status());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        std::hint::black_box(body.expect("a body"));
    }
    started.elapsed().as_nanos() as f64 / f64::from(REQUESTS_PER_ROUND)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let plain = Router::new().route("/payments", post(create_payment));
        let layered = |idem: Idempotency| plain.clone().layer(IdempotencyLayer::new(idem));
        let memory = layered(Idempotency::new(MemoryStore::new()));
        let cached = layered(
            Idempotency::new(MemoryStore::new())
                .with_replay_cache(ReplayCache::new(10_000, 16 << 20)),
        );
        for app in [&memory, &cached] {
            per_request(app, |_| "replayed".to_owned()).await;
        }
        let names = [
            "no layer",
            "layer, replay",
            "layer, replay, replay cache on",
            "layer, new key",
        ];
        let mut samples = vec![Vec::new(); names.len()];
        for round in 0..ROUNDS {
            let figures = [
                per_request(&plain, |_| "replayed".to_owned()).await,
                per_request(&memory, |_| "replayed".to_owned()).await,
                per_request(&cached, |_| "replayed".to_owned()).await,
                per_request(&memory, |n| format!("new-{round}-{n}")).await,
            ];
            for (sample, figure) in samples.iter_mut().zip(figures) {
                sample.push(figure);
            }
        }
        let medians: Vec<f64> = samples.into_iter().map(median).collect();
        println!("### The layer in the process, one caller, a {}-byte JSON body", BODY.len());
        println!();
        println!("Median of {ROUNDS} interleaved rounds of {REQUESTS_PER_ROUND} requests each; the app called as a tower service, the response read whole.");
        println!();
        println!("| what | ns per request | µs added by the layer |");
        println!("|---|---|---|");
        for (name, figure) in names.iter().zip(&medians) {
            println!(
                "| {name} | {figure:.0} | {:.2} |",
                (figure - medians[0]) / 1000.0
            );
        }
    });
}
