//! Which responses are stored, and what happens to the others.

use crate::support;

use std::sync::Arc;

use axum::http::StatusCode;
use idem_http::{problem, IdempotencyLayer, DEFAULT_MAX_RESPONSE_BODY};
use support::{app, memory, send, serve, Payments};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_releases_the_key_for_the_retry() {
    let payments = Payments::answering(StatusCode::INTERNAL_SERVER_ERROR);
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let failed = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(failed.status, 500);
    assert_eq!(
        failed.header("set-cookie"),
        Some("session=secret"),
        "passed on whole"
    );

    *payments.status.lock().unwrap() = Some(StatusCode::CREATED);
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(retry.status, 201);
    assert!(!retry.replayed());
    assert_eq!(payments.runs(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_again_and_authentication_statuses_release_the_key_and_client_errors_are_stored() {
    for (status, stored) in [
        (429, false),
        (408, false),
        (409, false),
        (425, false),
        (499, false),
        (404, true),
        (403, false),
        (401, false),
        (407, false),
    ] {
        let payments = Payments::answering(StatusCode::from_u16(status).unwrap());
        let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;
        send(server.post("/payments", Some("pay-1"), "{}")).await;
        let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
        assert_eq!(retry.status, status);
        assert_eq!(retry.replayed(), stored, "{status}");
        assert_eq!(payments.runs(), if stored { 1 } else { 2 }, "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storing_everything_replays_a_5xx() {
    let payments = Payments::answering(StatusCode::BAD_GATEWAY);
    let layer = IdempotencyLayer::builder(memory())
        .store_when(|_| true)
        .build();
    let server = serve(app(layer, payments.clone())).await;

    send(server.post("/payments", Some("pay-1"), "{}")).await;
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(retry.status, 502);
    assert!(retry.replayed());
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_over_the_limit_gets_a_413_and_reserves_nothing() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .max_request_body(1024)
        .build();
    let server = serve(app(layer, payments.clone())).await;

    let big = format!(r#"{{"memo":"{}"}}"#, "x".repeat(2048));
    send(server.post("/payments", Some("pay-1"), &big))
        .await
        .assert_problem(413, problem::BODY_TOO_LARGE, Some("pay-1"));
    assert_eq!(payments.runs(), 0);

    let small = send(server.post("/payments", Some("pay-1"), r#"{"memo":"x"}"#)).await;
    assert_eq!(small.status, 201);
    assert!(!small.replayed(), "the 413 left no record behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_of_exactly_the_limit_is_taken_and_one_byte_more_is_not() {
    let payments = Arc::new(Payments::default());
    let layer = IdempotencyLayer::builder(memory())
        .max_request_body(1024)
        .build();
    let server = serve(app(layer, payments.clone())).await;
    // `{"memo":""}` is 11 bytes.
    let body_of = |len: usize| format!(r#"{{"memo":"{}"}}"#, "x".repeat(len - 11));

    let at_limit = body_of(1024);
    assert_eq!(at_limit.len(), 1024);
    let first = send(server.post("/payments", Some("pay-1"), &at_limit)).await;
    assert_eq!(first.status, 201);
    let retry = send(server.post("/payments", Some("pay-1"), &at_limit)).await;
    assert!(retry.replayed());

    send(server.post("/payments", Some("pay-2"), &body_of(1025)))
        .await
        .assert_problem(413, problem::BODY_TOO_LARGE, Some("pay-2"));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_over_the_limit_reaches_the_client_and_its_key_stays_handled() {
    let payments = Arc::new(Payments::default());
    let len = DEFAULT_MAX_RESPONSE_BODY + 10_000;
    *payments.streamed_len.lock().unwrap() = Some(len);
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let first = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(first.status, 201);
    assert_eq!(first.body.len(), len);
    assert!(first.body.iter().all(|&b| b == b'x'));

    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("pay-1"));
    assert_eq!(retry.json()["handled_status"], 201);
    assert!(retry.replayed());
    assert_eq!(payments.runs(), 1, "handled once, never again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_response_within_the_limit_is_stored() {
    let payments = Arc::new(Payments::default());
    *payments.streamed_len.lock().unwrap() = Some(5_000);
    let server = serve(app(IdempotencyLayer::new(memory()), payments.clone())).await;

    let first = send(server.post("/payments", Some("pay-1"), "{}")).await;
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(retry.body, first.body);
    assert_eq!(payments.runs(), 1);
}
