//! A request refused by validation leaves no result: the client may correct it and resend it
//! with the same key.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use idem_http::{is_validation_answer, problem, stored_by_default, IdempotencyLayer};
use serde::Deserialize;
use support::{memory, send, serve};

#[derive(Deserialize)]
struct Order {
    amount: u64,
}

async fn create_order(
    State(runs): State<Arc<AtomicUsize>>,
    Json(order): Json<Order>,
) -> (StatusCode, Json<serde_json::Value>) {
    let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
    let body = serde_json::json!({ "order": run, "amount": order.amount });
    (StatusCode::CREATED, Json(body))
}

/// Orders behind `layer`, read with axum's `Json` extractor, which answers 400, 415 or 422
/// before the handler runs.
fn orders(layer: IdempotencyLayer, runs: Arc<AtomicUsize>) -> Router {
    Router::new()
        .route("/orders", post(create_order))
        .with_state(runs)
        .layer(layer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrected_request_runs_with_the_key_its_refused_one_used() {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = serve(orders(IdempotencyLayer::new(memory()), runs.clone())).await;
    let corrected = r#"{"amount":5}"#;

    let missing_field = send(server.post("/orders", Some("order-1"), "{}")).await;
    assert_eq!(missing_field.status, 422);
    let created = send(server.post("/orders", Some("order-1"), corrected)).await;
    assert_eq!(created.status, 201);
    assert!(!created.replayed());

    let bad_syntax = send(server.post("/orders", Some("order-2"), "{")).await;
    assert_eq!(bad_syntax.status, 400);
    assert_eq!(
        send(server.post("/orders", Some("order-2"), corrected))
            .await
            .status,
        201
    );

    let no_content_type = server
        .client
        .post(format!("{}/orders", server.url))
        .header("idempotency-key", "order-3")
        .body(corrected);
    assert_eq!(send(no_content_type).await.status, 415);
    assert_eq!(
        send(server.post("/orders", Some("order-3"), corrected))
            .await
            .status,
        201
    );
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    let retry = send(server.post("/orders", Some("order-1"), corrected)).await;
    assert!(retry.replayed(), "the corrected request's answer is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_answers_are_stored_when_the_layer_is_told_to() {
    let runs = Arc::new(AtomicUsize::new(0));
    let layer = IdempotencyLayer::builder(memory())
        .store_when(|status| stored_by_default(status) || is_validation_answer(status))
        .build();
    let server = serve(orders(layer, runs.clone())).await;

    assert_eq!(
        send(server.post("/orders", Some("order-1"), "{}"))
            .await
            .status,
        422
    );
    send(server.post("/orders", Some("order-1"), r#"{"amount":5}"#))
        .await
        .assert_problem(422, problem::KEY_REUSED, Some("order-1"));
    let resent = send(server.post("/orders", Some("order-1"), "{}")).await;
    assert!(resent.replayed());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
