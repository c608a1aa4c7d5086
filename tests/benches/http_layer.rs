//! Requests per second through `idem_http::IdempotencyLayer`, next to the same router without
//! it, in the same run, over real HTTP on loopback.
//!
//! ```text
//! cargo bench -p idem-tests --features http,redis --bench http_layer
//! ```
//!
//! Each phase has 32 client tasks POST a small JSON body for a few seconds (`IDEM_BENCH_SECS`,
//! default 2) through one keep-alive reqwest client, to an axum server in the same process:
//! without the layer, then with it on the memory store and on Redis, each with a fresh key per
//! request (reserve, run, store) and with one key replayed. Three rounds of all the phases run
//! side by side; the table shows medians.
//! Redis phases run when a `redis-server` can be started on a free loopback port (or
//! `IDEM_REDIS_URL` names one). Client and server share the machine, so the ratios compare
//! whole round trips, client included.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_core::{Idempotency, OwnerToken};
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use idem_stores::redis::{client as redis, RedisStore};
use idem_tests::redis::server::TestRedis;
use tokio::net::TcpListener;

const TASKS: usize = 32;
const ROUNDS: usize = 3;
const BODY: &str = r#"{"amount":1000,"currency":"eur","order":"order-42"}"#;

async fn create_payment(body: String) -> (StatusCode, String) {
    (
        StatusCode::CREATED,
        format!(r#"{{"id":"ch_1","request":{body}}}"#),
    )
}

async fn serve(layer: Option<IdempotencyLayer>) -> String {
    let router = Router::new().route("/payments", post(create_payment));
    let router = match layer {
        Some(layer) => router.layer(layer),
        None => router,
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

#[derive(Clone, Copy)]
enum Keys {
    /// A new key per request: the handler runs and its response is stored.
    Fresh,
    /// One key for every request: replays.
    Replayed,
}

async fn request(client: &reqwest::Client, url: &str, key: String) -> reqwest::Response {
    client
        .post(url)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await
        .unwrap()
}

/// Requests per second against `url` for `secs`.
async fn throughput(client: &reqwest::Client, url: &str, keys: Keys, secs: Duration) -> f64 {
    static NEXT_KEY: AtomicU64 = AtomicU64::new(0);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (client, url, stop, done) =
                (client.clone(), url.to_owned(), stop.clone(), done.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let key = match keys {
                        Keys::Fresh => format!("key-{}", NEXT_KEY.fetch_add(1, Ordering::Relaxed)),
                        Keys::Replayed => "key-replayed".to_owned(),
                    };
                    let response = request(&client, &url, key.clone()).await;
                    let status = response.status();
                    let body = response.bytes().await.unwrap();
                    assert_eq!(status, 201, "{url} {key}: {body:?}");
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
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let secs = Duration::from_secs(
        std::env::var("IDEM_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2),
    );
    // Every request carries `Authorization`: the layer refuses keyed requests without a scope.
    let mut credentials = reqwest::header::HeaderMap::new();
    credentials.insert(
        "authorization",
        reqwest::header::HeaderValue::from_static("Bearer bench-client"),
    );
    let client = reqwest::Client::builder()
        .default_headers(credentials)
        .build()
        .unwrap();
    let plain = serve(None).await;
    let memory = serve(Some(IdempotencyLayer::new(Idempotency::new(
        MemoryStore::new(),
    ))))
    .await;
    let redis_server = TestRedis::start();
    let redis_url = match &redis_server {
        Some(redis) => {
            let store = RedisStore::builder(redis::Client::open(redis.url()).unwrap())
                // A prefix of this run's own, on a server that earlier runs may have used.
                .prefix(format!("bench-http-{}:", OwnerToken::generate().as_str()))
                .connect()
                .await
                .expect("the server accepts connections");
            Some(serve(Some(IdempotencyLayer::new(Idempotency::new(store)))).await)
        }
        None => None,
    };

    // Warm up connections and code paths, and store the response the replay phases replay.
    for url in [Some(&plain), Some(&memory), redis_url.as_ref()]
        .into_iter()
        .flatten()
    {
        throughput(&client, url, Keys::Fresh, Duration::from_millis(300)).await;
        let first = request(&client, url, "key-replayed".to_owned()).await;
        assert_eq!(first.status(), 201);
    }

    let mut phases = vec![
        ("no layer", plain.clone(), Keys::Fresh),
        (
            "layer, memory, fresh key per request",
            memory.clone(),
            Keys::Fresh,
        ),
        (
            "layer, memory, one key replayed",
            memory.clone(),
            Keys::Replayed,
        ),
    ];
    if let Some(url) = &redis_url {
        phases.push((
            "layer, redis, fresh key per request",
            url.clone(),
            Keys::Fresh,
        ));
        phases.push((
            "layer, redis, one key replayed",
            url.clone(),
            Keys::Replayed,
        ));
    }
    // Rounds of every phase side by side, so that a load change on the machine hits each
    // phase alike; each ratio is taken within its round, and the median is shown.
    let mut rates = vec![Vec::new(); phases.len()];
    for _ in 0..ROUNDS {
        for (phase, (_, url, keys)) in phases.iter().enumerate() {
            rates[phase].push(throughput(&client, url, *keys, secs).await);
        }
    }

    println!(
        "\nidem-http: {TASKS} concurrent clients, {ROUNDS} rounds of {} s per phase, POST /payments on loopback\n",
        secs.as_secs()
    );
    println!("| router | requests/s (median) | vs no layer (median of rounds) |");
    println!("|---|---:|---:|");
    for (phase, (name, _, _)) in phases.iter().enumerate() {
        let ratios: Vec<f64> = (0..ROUNDS)
            .map(|round| rates[phase][round] / rates[0][round])
            .collect();
        println!(
            "| {name} | {:.0} | {:.2} |",
            median(&rates[phase]),
            median(&ratios)
        );
    }
    if redis_url.is_none() {
        println!("\n(no redis-server: the Redis rows were not measured)");
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}
