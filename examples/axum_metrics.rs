//! The payments server of `axum_payments`, exporting idem's metrics in Prometheus' text format
//! on `GET /metrics` (through `metrics-exporter-prometheus`; any `metrics` recorder would do).
//! A client charges, retries, reuses a key by mistake and collides with itself in flight; the
//! scrape then shows each of these as its own outcome.
//!
//! Run with `cargo run -p idem-examples --features metrics --example axum_metrics`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::sync::{mpsc, Semaphore};

/// The payment provider: counts charges, tells of each one it starts, and holds each until a
/// permit is given.
struct CardNetwork {
    charges: AtomicUsize,
    open: Semaphore,
    charging: mpsc::UnboundedSender<()>,
}

async fn create_payment(State(network): State<Arc<CardNetwork>>) -> (StatusCode, String) {
    let _ = network.charging.send(());
    network.open.acquire().await.expect("never closed").forget();
    let charge = network.charges.fetch_add(1, Ordering::SeqCst) + 1;
    (StatusCode::CREATED, format!("{{\"id\":\"ch_{charge}\"}}"))
}

async fn scrape(State(prometheus): State<PrometheusHandle>) -> String {
    prometheus.render()
}

async fn pay(client: &reqwest::Client, url: &str, key: &str, amount: u32) -> StatusCode {
    let status = client
        .post(format!("{url}/payments"))
        .header("authorization", "Bearer merchant-42")
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(format!("{{\"amount\":{amount}}}"))
        .send()
        .await
        .expect("the server answers")
        .status();
    println!("POST /payments  Idempotency-Key: {key}  amount {amount}  -> {status}");
    status
}

#[tokio::main]
async fn main() {
    let prometheus = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder of this process");
    let (charging, mut started) = mpsc::unbounded_channel();
    let network = Arc::new(CardNetwork {
        charges: AtomicUsize::new(0),
        open: Semaphore::new(0),
        charging,
    });
    let payments = Router::new()
        .route("/payments", post(create_payment))
        .with_state(network.clone())
        .layer(IdempotencyLayer::new(Idempotency::new(MemoryStore::new())));
    let app = payments.merge(
        Router::new()
            .route("/metrics", get(scrape))
            .with_state(prometheus),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    let client = reqwest::Client::new();

    network.open.add_permits(1);
    assert_eq!(pay(&client, &url, "order-1", 10).await, StatusCode::CREATED);
    started.recv().await.expect("order-1 was charged");
    assert_eq!(pay(&client, &url, "order-1", 10).await, StatusCode::CREATED);
    assert_eq!(
        pay(&client, &url, "order-1", 99).await,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let first = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { pay(&client, &url, "order-2", 20).await }
    });
    // The first order-2 request is being charged before its duplicate is sent.
    started.recv().await.expect("order-2 is being charged");
    assert_eq!(
        pay(&client, &url, "order-2", 20).await,
        StatusCode::CONFLICT
    );
    network.open.add_permits(1);
    assert_eq!(first.await.expect("no panic"), StatusCode::CREATED);
    assert_eq!(network.charges.load(Ordering::SeqCst), 2);

    let scraped = client
        .get(format!("{url}/metrics"))
        .send()
        .await
        .expect("the server answers")
        .text()
        .await
        .expect("a body");
    println!("\nGET /metrics (idem's counters):");
    for line in scraped.lines().filter(|line| {
        line.starts_with("idem_calls_total") || line.starts_with("idem_http_requests_total")
    }) {
        println!("  {line}");
    }
    for expected in [
        r#"idem_calls_total{function="http",outcome="executed"} 2"#,
        r#"idem_calls_total{function="http",outcome="replayed"} 1"#,
        r#"idem_calls_total{function="http",outcome="mismatch"} 1"#,
        r#"idem_calls_total{function="http",outcome="in_progress"} 1"#,
        r#"idem_http_requests_total{outcome="executed"} 2"#,
    ] {
        assert!(scraped.contains(expected), "{expected} in\n{scraped}");
    }
    assert!(scraped.contains("idem_store_duration_seconds"));
    println!("\nTwo charges; the retry, the reused key and the duplicate in flight each counted.");
}
