//! The client half of the contract, over real HTTP: an axum server with
//! `idem_http::IdempotencyLayer`, a proxy in front of it that loses answers on purpose, and a
//! reqwest client with `idem_client::IdempotentRetry` that keys, retries and waits for it.
//!
//! Run with `cargo run -p idem-examples --features client --example client_retries`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use http::Extensions;
use idem_client::reqwest_middleware::{ClientBuilder, Middleware, Next};
use idem_client::{key_of, was_replayed, IdempotentRetry};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The payment provider: counts charges; slow to answer while `slow` is set.
#[derive(Default)]
struct CardNetwork {
    /// Charges begun.
    started: AtomicUsize,
    /// Told each time a charge begins.
    begun: Notify,
    charges: AtomicUsize,
    slow: std::sync::atomic::AtomicBool,
}

impl CardNetwork {
    /// Returns once `count` charges have begun.
    async fn begun(&self, count: usize) {
        loop {
            let told = self.begun.notified();
            if self.started.load(Ordering::SeqCst) >= count {
                return;
            }
            told.await;
        }
    }
}

async fn create_payment(
    State(network): State<Arc<CardNetwork>>,
    body: String,
) -> (StatusCode, String) {
    network.started.fetch_add(1, Ordering::SeqCst);
    network.begun.notify_waiters();
    if network.slow.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(800)).await;
    }
    let charge = network.charges.fetch_add(1, Ordering::SeqCst) + 1;
    (
        StatusCode::CREATED,
        format!("{{\"id\":\"ch_{charge}\",\"request\":{body}}}"),
    )
}

/// What the proxy does to the next connections; the ones after pass.
#[derive(Clone, Copy)]
enum Fault {
    /// The server's answer is read and dropped; the client's connection is closed.
    LoseAnswer,
    /// The client's connection is closed once the charge it asked for has begun.
    CutOnceCharging,
}

/// A TCP proxy on a free loopback port in front of `upstream`, faulty as `plan` says.
async fn lossy_proxy(
    upstream: SocketAddr,
    network: Arc<CardNetwork>,
    plan: Arc<Mutex<VecDeque<Fault>>>,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        loop {
            let (mut client, _) = listener.accept().await.expect("a connection");
            let fault = plan.lock().expect("not poisoned").pop_front();
            let network = network.clone();
            tokio::spawn(async move {
                let mut server = TcpStream::connect(upstream).await.expect("the server");
                let Some(fault) = fault else {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    return;
                };
                let begun = network.started.load(Ordering::SeqCst);
                let request = read_request(&mut client).await;
                server.write_all(&request).await.expect("forwarded");
                let mut answer = vec![0; 4096];
                match fault {
                    Fault::LoseAnswer => {
                        let _ = server.read(&mut answer).await;
                    }
                    Fault::CutOnceCharging => network.begun(begun + 1).await,
                }
                drop(client);
                while matches!(server.read(&mut answer).await, Ok(n) if n > 0) {}
            });
        }
    });
    url
}

/// One request, whole: its head, then the body its `Content-Length` announces.
async fn read_request(client: &mut TcpStream) -> Vec<u8> {
    let mut request = Vec::new();
    let mut buffer = [0; 4096];
    loop {
        let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |value| value.trim().parse().expect("a length"));
            if request.len() >= end + 4 + length {
                return request;
            }
        }
        let read = client.read(&mut buffer).await.expect("a request");
        assert!(read > 0, "the client closed before its request was whole");
        request.extend_from_slice(&buffer[..read]);
    }
}

/// Prints every attempt the retry middleware makes: it sits after it in the chain.
struct ShowAttempts;

#[async_trait::async_trait]
impl Middleware for ShowAttempts {
    async fn handle(
        &self,
        request: idem_client::reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> idem_client::reqwest_middleware::Result<idem_client::reqwest::Response> {
        let key = request
            .headers()
            .get("idempotency-key")
            .map(|key| key.to_str().unwrap_or("?").to_owned());
        let key = key.map_or_else(
            || "no key".to_owned(),
            |key| format!("Idempotency-Key: {key}"),
        );
        println!("   -> {} {}  {key}", request.method(), request.url().path());
        let outcome = next.run(request, extensions).await;
        match &outcome {
            Ok(response) => {
                let mut shown = format!("   <- {}", response.status());
                if let Some(seconds) = response.headers().get("retry-after") {
                    shown.push_str(&format!(
                        "  Retry-After: {}",
                        seconds.to_str().unwrap_or("?")
                    ));
                }
                if was_replayed(response) {
                    shown.push_str("  Idempotent-Replayed: true");
                }
                println!("{shown}");
            }
            Err(error) => println!("   <- no answer ({error})"),
        }
        outcome
    }
}

#[tokio::main]
async fn main() {
    let network = Arc::new(CardNetwork::default());
    let app = Router::new()
        .route("/payments", post(create_payment))
        .with_state(network.clone())
        .layer(IdempotencyLayer::new(Idempotency::new(MemoryStore::new())));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let server = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("the server runs") });
    let plan = Arc::new(Mutex::new(VecDeque::new()));
    let proxy = lossy_proxy(server, network.clone(), plan.clone()).await;
    println!("server on http://{server}, a lossy proxy in front of it on {proxy}\n");

    // A new connection per attempt, so that each fault of the plan hits one attempt.
    // Keys are scoped by `Authorization`: a keyed request without one is refused.
    let mut credentials = idem_client::reqwest::header::HeaderMap::new();
    credentials.insert(
        "authorization",
        idem_client::reqwest::header::HeaderValue::from_static("Bearer merchant-42"),
    );
    let http = idem_client::reqwest::Client::builder()
        .default_headers(credentials)
        .pool_max_idle_per_host(0)
        .build()
        .expect("a client");
    let client = ClientBuilder::new(http)
        .with(IdempotentRetry::default())
        .with(ShowAttempts)
        .build();
    let url = format!("{proxy}/payments");
    let order = r#"{"order":"o_42","amount":1250,"currency":"eur"}"#;
    let send = |body: &'static str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    println!("1. The answer to the first attempt is lost. The middleware minted a key before it,");
    println!("   and retries with the same key: the server replays the charge it made.");
    plan.lock()
        .expect("not poisoned")
        .push_back(Fault::LoseAnswer);
    let paid = send(order).await.expect("an answer");
    assert_eq!(paid.status(), StatusCode::CREATED);
    assert!(was_replayed(&paid));
    let key = key_of(&paid).expect("a keyed send").to_owned();
    println!(
        "   = {} with key {key}: {}\n",
        paid.status(),
        paid.text().await.expect("a body")
    );
    assert_eq!(network.charges.load(Ordering::SeqCst), 1);

    println!("2. The provider is slow and the connection drops after the request went out. The");
    println!("   retry finds the first attempt still running (409), waits as Retry-After says,");
    println!("   and gets its answer.");
    network.slow.store(true, Ordering::SeqCst);
    plan.lock()
        .expect("not poisoned")
        .push_back(Fault::CutOnceCharging);
    let paid = send(r#"{"order":"o_43","amount":990,"currency":"eur"}"#)
        .await
        .expect("an answer");
    assert_eq!(paid.status(), StatusCode::CREATED);
    assert!(was_replayed(&paid));
    println!(
        "   = {}: {}\n",
        paid.status(),
        paid.text().await.expect("a body")
    );
    assert_eq!(network.charges.load(Ordering::SeqCst), 2);
    network.slow.store(false, Ordering::SeqCst);

    println!(
        "3. Sending the same order again is a new operation, with a new key: a second charge."
    );
    println!(
        "   To repeat an operation later (after a restart, from a queue), set its key yourself."
    );
    let again = send(order).await.expect("an answer");
    assert!(!was_replayed(&again));
    assert_ne!(key_of(&again), Some(key.as_str()));
    println!();
    assert_eq!(network.charges.load(Ordering::SeqCst), 3);

    println!("4. A bug reuses a key for another payment: refused with 422, and not retried.");
    let reused = client
        .post(&url)
        .header("idempotency-key", key.as_str())
        .header("content-type", "application/json")
        .body(r#"{"order":"o_42","amount":99999,"currency":"eur"}"#)
        .send()
        .await
        .expect("an answer");
    assert_eq!(reused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    println!();

    assert_eq!(network.charges.load(Ordering::SeqCst), 3);
    println!("Three payments asked for, three charges, whatever the network did.");
}
