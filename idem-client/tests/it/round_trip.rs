//! The client against idem-http as both ship: the layer's default scope (the caller's
//! `Authorization`), a real HTTP server on loopback. Guards the seam between the two: a client
//! with credentials gets its operation run once and replayed, and one without gets an error
//! that says what the server needs, instead of a bare 400.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::{extract::State, http::StatusCode, routing::post, Router};
use idem_client::reqwest_middleware::ClientBuilder;
use idem_client::{key_of, was_replayed, IdempotentRetry, Unscoped};
use idem_core::Idempotency;
use idem_http::IdempotencyLayer;
use idem_stores::memory::MemoryStore;

/// Serves `POST /payments` behind the layer as the quickstart sets it up, counting charges.
async fn shop() -> (String, Arc<AtomicUsize>) {
    let charges = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/payments",
            post(|State(charges): State<Arc<AtomicUsize>>| async move {
                charges.fetch_add(1, Ordering::SeqCst);
                (StatusCode::CREATED, "charged")
            }),
        )
        .layer(IdempotencyLayer::new(Idempotency::new(MemoryStore::new())))
        .with_state(charges.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/payments", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, charges)
}

#[tokio::test]
async fn with_credentials_an_operation_runs_once_and_its_key_replays() {
    let (url, charges) = shop().await;
    let client = ClientBuilder::new(idem_client::reqwest::Client::new())
        .with(IdempotentRetry::default())
        .build();

    let first = client
        .post(&url)
        .bearer_auth("alice's token")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 201);
    let key = key_of(&first).unwrap().to_owned();

    let again = client
        .post(&url)
        .bearer_auth("alice's token")
        .header(idem_client::IDEMPOTENCY_KEY, key.as_str())
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(was_replayed(&again));
    assert_eq!(again.text().await.unwrap(), "charged");
    assert_eq!(charges.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn without_credentials_the_refusal_says_what_the_server_needs() {
    let (url, charges) = shop().await;
    let client = ClientBuilder::new(idem_client::reqwest::Client::new())
        .with(IdempotentRetry::default())
        .build();

    let error = client.post(&url).body("{}").send().await.unwrap_err();

    let refused = Unscoped::of(&error).expect("the layer's 400 UNSCOPED, as an error");
    assert!(!refused.key().is_empty());
    let message = error.to_string();
    assert!(message.contains("Authorization"), "{message}");
    assert!(message.contains(refused.key()), "{message}");
    assert_eq!(charges.load(Ordering::SeqCst), 0, "nothing ran");
}
