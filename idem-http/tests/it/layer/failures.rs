//! What the client is told when the store fails.

use crate::support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::post;
use axum::Router;
use http::header::CONTENT_LENGTH;
use idem_core::Idempotency;
use idem_http::{problem, IdempotencyLayer};
use support::{app, send, serve, FaultyStore, Payments};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_gets_a_503_and_nothing_runs() {
    let payments = Arc::new(Payments::default());
    let store = Arc::new(FaultyStore::default());
    store.unreachable.store(true, Ordering::SeqCst);
    let layer = IdempotencyLayer::new(Idempotency::from_arc(store.clone()));
    let server = serve(app(layer, payments.clone())).await;

    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(503, problem::STORE_UNAVAILABLE, Some("pay-1"));
    assert_eq!(payments.runs(), 0);

    store.unreachable.store(false, Ordering::SeqCst);
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(retry.status, 201);
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handled_request_whose_response_was_not_recorded_gets_a_500() {
    let payments = Arc::new(Payments::default());
    let store = Arc::new(FaultyStore::default());
    store.complete_fails.store(true, Ordering::SeqCst);
    // The completion is retried for as long as the lease holds: a short one keeps this quick.
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone()))
        .lease(Duration::from_secs(3))
        .build();
    let server = serve(app(layer, payments.clone())).await;

    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(500, problem::NOT_RECORDED, Some("pay-1"));
    assert_eq!(payments.runs(), 1);

    store.complete_fails.store(false, Ordering::SeqCst);
    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
    assert_eq!(
        payments.runs(),
        1,
        "the key stays held: the effect may have happened"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_that_declares_its_length_is_answered_only_once_stored() {
    // Its length within the limit, the response is buffered and held back until its record
    // is written; when that fails, the client is told so rather than handed the response.
    let store = Arc::new(FaultyStore::default());
    store.complete_fails.store(true, Ordering::SeqCst);
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone()))
        .lease(Duration::from_secs(3))
        .build();
    let handler = || async { ([(CONTENT_LENGTH, "7")], "charged") };
    let server = serve(Router::new().route("/payments", post(handler)).layer(layer)).await;

    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(500, problem::NOT_RECORDED, Some("pay-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_panics_gets_a_500_and_its_key_stays_held() {
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let router = {
        let runs = runs.clone();
        Router::new()
            .route(
                "/payments",
                post(move || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    async { panic!("the handler fails halfway") as &'static str }
                }),
            )
            .layer(IdempotencyLayer::new(support::memory()))
    };
    let server = serve(router).await;

    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(500, problem::NOT_RECORDED, Some("pay-1"));
    // The effect may have happened: the retry is told to wait, and nothing runs again.
    send(server.post("/payments", Some("pay-1"), "{}"))
        .await
        .assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
    // The panic ended that request only: the same server answers the next one.
    send(server.post("/payments", Some("pay-2"), "{}"))
        .await
        .assert_problem(500, problem::NOT_RECORDED, Some("pay-2"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
