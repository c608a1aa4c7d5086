//! What the layer costs a request in the process, without a network: an axum app called as a
//! tower service, with no layer and with `IdempotencyLayer` on the memory store, replays and
//! new keys, each timed in interleaved rounds; medians per request. Then how a replay's cost
//! grows with the response it replays: 100 B, 10 KB and 1 MB (10^6 bytes, within the layer's
//! default `max_response_body`) answered by a handler that returns a static `Bytes`, beside
//! the same request through no layer.
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
use bytes::Bytes;
use idem_core::{Idempotency, ReplayCache};
use idem_http::IdempotencyLayer;
use idem_protocol::header::IDEMPOTENT_REPLAYED;
use idem_stores::memory::MemoryStore;
use tower_service::Service;

const ROUNDS: usize = 7;
const REQUESTS_PER_ROUND: u32 = 20_000;
/// The responses replayed in the replay-size table, in bytes.
const RESPONSE_SIZES: [usize; 3] = [100, 10_000, 1_000_000];
/// Response bytes a row of the replay-size table reads per round, at most: fewer requests
/// for a larger response, at least 100.
const RESPONSE_BYTES_PER_ROUND: usize = 200_000_000;
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

/// Nanoseconds per request of `app`, `requests` of them with the key `replayed`, each answered
/// with a `size`-byte body, replayed when `replay`.
async fn per_replay(app: &Router, requests: u32, size: usize, replay: bool) -> f64 {
    let started = Instant::now();
    for _ in 0..requests {
        let response = app
            .clone()
            .call(request("replayed"))
            .await
            .expect("an answer");
        assert!(response.status().is_success(), "{}", response.status());
        assert_eq!(response.headers().contains_key(IDEMPOTENT_REPLAYED), replay);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await;
        assert_eq!(std::hint::black_box(body.expect("a body")).len(), size);
    }
    started.elapsed().as_nanos() as f64 / f64::from(requests)
}

/// The app whose handler answers `size` bytes of text, taken from `text` without a copy.
fn answering(text: &'static [u8], size: usize) -> Router {
    let body = Bytes::from_static(&text[..size]);
    Router::new().route("/payments", post(move || async move { body }))
}

/// Per response size: ns per request through no layer, a replay and a replay with the replay
/// cache on, medians of interleaved rounds.
async fn replay_sizes() -> Vec<(usize, u32, [f64; 3])> {
    let largest = RESPONSE_SIZES.into_iter().max().unwrap_or(0);
    let text: &'static [u8] = (0..largest)
        .map(|n| b"abcdefghijklmnopqrstuvwxyz0123456789 "[n % 37])
        .collect::<Vec<u8>>()
        .leak();
    let mut apps = Vec::new();
    for size in RESPONSE_SIZES {
        let plain = answering(text, size);
        let layered = |idem: Idempotency| plain.clone().layer(IdempotencyLayer::new(idem));
        let memory = layered(Idempotency::new(MemoryStore::new()));
        let cached = layered(
            Idempotency::new(MemoryStore::new())
                .with_replay_cache(ReplayCache::new(10_000, 16 << 20)),
        );
        // The first request with the key runs the handler and keeps its answer.
        for app in [&memory, &cached] {
            per_replay(app, 1, size, false).await;
        }
        let requests = (RESPONSE_BYTES_PER_ROUND / size).clamp(100, REQUESTS_PER_ROUND as usize);
        apps.push((size, requests as u32, [plain, memory, cached]));
    }
    let mut samples = vec![[Vec::new(), Vec::new(), Vec::new()]; apps.len()];
    for _ in 0..ROUNDS {
        for ((size, requests, routers), sample) in apps.iter().zip(&mut samples) {
            for (column, app) in routers.iter().enumerate() {
                let replay = column > 0;
                sample[column].push(per_replay(app, *requests, *size, replay).await);
            }
        }
    }
    apps.iter()
        .zip(samples)
        .map(|((size, requests, _), sample)| (*size, *requests, sample.map(median)))
        .collect()
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
        let sizes = replay_sizes().await;
        println!();
        println!("### A replay by the size of the response it replays");
        println!();
        println!("The handler answers a static `Bytes` of text; the layer on the memory store; median of {ROUNDS} interleaved rounds (requests per round in the table), the response read whole.");
        println!();
        println!("| response bytes | requests per round | no layer, ns | replay, ns | × no layer | replay, replay cache on, ns | × no layer |");
        println!("|---|---|---|---|---|---|---|");
        for (size, requests, [plain, replay, cached]) in sizes {
            println!(
                "| {size} | {requests} | {plain:.0} | {replay:.0} | {:.2}× | {cached:.0} | {:.2}× |",
                replay / plain,
                cached / plain
            );
        }
    });
}
