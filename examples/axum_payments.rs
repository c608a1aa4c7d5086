//! The retry story over real HTTP: an axum server with `idem_http::IdempotencyLayer` on a free
//! loopback port, and a client that loses an answer, retries, reuses a key by mistake and
//! retries while the first request still runs.
//!
//! Run with `cargo run -p idem-examples --features http --example axum_payments`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tokio::sync::Semaphore;

/// The client's credentials: keys are scoped by `Authorization`, and a keyed request without
/// one is refused.
const MERCHANT: &str = "Bearer merchant-42";

/// The payment provider: counts charges, and can be made slow to answer.
struct CardNetwork {
    charges: AtomicUsize,
    /// When a permit is missing, a charge waits for one: the provider is slow.
    open: Semaphore,
}

async fn create_payment(
    State(network): State<Arc<CardNetwork>>,
    body: String,
) -> impl IntoResponse {
    network.open.acquire().await.expect("never closed").forget();
    let charge = network.charges.fetch_add(1, Ordering::SeqCst) + 1;
    (
        StatusCode::CREATED,
        [(header::LOCATION, format!("/payments/ch_{charge}"))],
        format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}"),
    )
}

struct Exchange {
    status: StatusCode,
    replayed: bool,
    retry_after: Option<u64>,
    body: String,
}

/// Sends one POST and prints the exchange.
async fn pay(client: &reqwest::Client, url: &str, key: &str, body: &str) -> Exchange {
    println!("-> POST /payments  Idempotency-Key: {key}  {body}");
    let response = client
        .post(url)
        .header("authorization", MERCHANT)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("the server answers");
    let header = |name: &str| {
        let value = response.headers().get(name)?;
        Some(value.to_str().ok()?.to_owned())
    };
    let replayed = header("idempotent-replayed").as_deref() == Some("true");
    let retry_after = header("retry-after").and_then(|value| value.parse().ok());
    let status = response.status();
    let body = response.text().await.expect("a body");
    let mut shown = format!("<- {status}");
    if replayed {
        shown.push_str("  Idempotent-Replayed: true");
    }
    if let Some(seconds) = retry_after {
        shown.push_str(&format!("  Retry-After: {seconds}"));
    }
    println!("{shown}  {body}\n");
    Exchange {
        status,
        replayed,
        retry_after,
        body,
    }
}

#[tokio::main]
async fn main() {
    let network = Arc::new(CardNetwork {
        charges: AtomicUsize::new(0),
        open: Semaphore::new(0),
    });
    let idem = Idempotency::new(MemoryStore::new());
    let app = Router::new()
        .route("/payments", post(create_payment))
        .with_state(network.clone())
        .layer(IdempotencyLayer::new(idem));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/payments", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    println!("serving on {url}\n");
    let client = reqwest::Client::new();
    let order = r#"{"amount":1000,"currency":"eur"}"#;

    println!("1. The first attempt charges the card.");
    network.open.add_permits(1);
    let first = pay(&client, &url, "order-42", order).await;
    assert_eq!((first.status, first.replayed), (StatusCode::CREATED, false));

    println!("2. The answer was lost on the way: the client retries with the same key.");
    let retry = pay(
        &client,
        &url,
        "order-42",
        r#"{ "currency": "eur", "amount": 1000 }"#,
    )
    .await;
    assert!(
        retry.replayed,
        "same JSON value, keys in another order: a replay"
    );
    assert_eq!(retry.body, first.body);
    assert_eq!(network.charges.load(Ordering::SeqCst), 1);

    println!("3. A bug reuses the key for another payment: refused.");
    let reused = pay(
        &client,
        &url,
        "order-42",
        r#"{"amount":5000,"currency":"eur"}"#,
    )
    .await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(network.charges.load(Ordering::SeqCst), 1);

    println!("4. The provider is slow: the client gives up after 200 ms...");
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .expect("a client");
    let gave_up = impatient
        .post(&url)
        .header("authorization", MERCHANT)
        .header("idempotency-key", "order-43")
        .header("content-type", "application/json")
        .body(order)
        .send()
        .await;
    let gave_up = gave_up.expect_err("the provider is held, so the client times out");
    println!("   (no answer: {gave_up})\n");

    println!("   ...and retries at once, while the first request still runs.");
    let busy = pay(&client, &url, "order-43", order).await;
    assert_eq!(busy.status, StatusCode::CONFLICT);

    println!("   The provider answers; the client backs off as Retry-After says and");
    println!("   gets the charge.");
    assert!(busy.retry_after.is_some_and(|seconds| seconds >= 1));
    network.open.add_permits(1);
    let done = loop {
        let seconds = busy.retry_after.unwrap_or(1);
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        let attempt = pay(&client, &url, "order-43", order).await;
        if attempt.status != StatusCode::CONFLICT {
            break attempt;
        }
    };
    assert_eq!((done.status, done.replayed), (StatusCode::CREATED, true));
    assert_eq!(network.charges.load(Ordering::SeqCst), 2);
    println!("Two orders, two charges, whatever the network did.");
}
