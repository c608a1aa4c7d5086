//! Duplicates that arrive while the first request runs, and clients that give up on it.

use crate::support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use idem_core::Idempotency;
use idem_http::{problem, IdempotencyLayer};
use support::{app, hang, memory, send, serve, soon, Answer, FaultyStore, Payments};
use tokio::sync::{mpsc, oneshot};
use tokio::time::timeout;

const CALLERS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_progress_gets_a_409_with_retry_after() {
    let (payments, mut started) = Payments::held();
    let server = Arc::new(serve(app(IdempotencyLayer::new(memory()), payments.clone())).await);

    let first = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
    soon(started.recv()).await.unwrap();
    let duplicate = send(server.post("/payments", Some("pay-1"), "{}")).await;
    duplicate.assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
    assert_eq!(
        duplicate.header("retry-after"),
        Some("1"),
        "a short default, not the 30 s lease"
    );

    payments.release();
    let first = first.await.unwrap();
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_configurable_and_never_past_the_lease() {
    for (retry_after, lease, expected) in [(7, 30, "7"), (60, 5, "5")] {
        let (payments, mut started) = Payments::held();
        let layer = IdempotencyLayer::builder(memory())
            .retry_after(Duration::from_secs(retry_after))
            .lease(Duration::from_secs(lease))
            .build();
        let server = Arc::new(serve(app(layer, payments.clone())).await);

        let first = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
        soon(started.recv()).await.unwrap();
        let duplicate = send(server.post("/payments", Some("pay-1"), "{}")).await;
        duplicate.assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
        assert_eq!(duplicate.header("retry-after"), Some(expected));
        payments.release();
        assert_eq!(first.await.unwrap().status, 201);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_a_duplicate_gets_the_first_response() {
    let (payments, mut started) = Payments::held();
    let store = Arc::new(FaultyStore::default());
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone()))
        .wait(hang())
        .build();
    let server = Arc::new(serve(app(layer, payments.clone())).await);

    let first = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
    soon(started.recv()).await.unwrap();
    let duplicate = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
    soon(store.waiting.notified()).await;
    payments.release();

    let (first, duplicate) = (first.await.unwrap(), duplicate.await.unwrap());
    assert_eq!(first.status, 201);
    assert!(duplicate.replayed());
    assert_eq!(duplicate.body, first.body);
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_duplicates_run_the_handler_once() {
    let (payments, mut started) = Payments::held();
    let server = Arc::new(serve(app(IdempotencyLayer::new(memory()), payments.clone())).await);
    let (answers, mut answered) = mpsc::unbounded_channel();
    for _ in 0..CALLERS {
        let (server, answers) = (server.clone(), answers.clone());
        tokio::spawn(async move {
            let answer = send(server.post("/payments", Some("pay-1"), r#"{"amount":1}"#)).await;
            answers.send(answer).unwrap();
        });
    }

    // The handler stays blocked until every duplicate has had its answer.
    soon(started.recv()).await.unwrap();
    let mut conflicts = 0;
    while conflicts < CALLERS - 1 {
        let answer = timeout(hang(), answered.recv())
            .await
            .expect("every duplicate answers")
            .unwrap();
        answer.assert_problem(409, problem::IN_PROGRESS, Some("pay-1"));
        conflicts += 1;
    }
    payments.release();
    let first: Answer = timeout(hang(), answered.recv()).await.unwrap().unwrap();
    assert_eq!(first.status, 201);
    assert!(!first.replayed());
    assert_eq!(payments.runs(), 1);

    let retry = send(server.post("/payments", Some("pay-1"), r#"{"amount":1}"#)).await;
    assert!(retry.replayed());
    assert_eq!(retry.body, first.body);
    assert_eq!(payments.runs(), 1);
}

/// Tells `dropped` when the request's future is dropped before it answered: the server gave
/// up on a client that disconnected.
async fn report_drop(
    dropped: mpsc::UnboundedSender<()>,
    request: Request,
    next: Next,
) -> axum::response::Response {
    struct Guard(Option<mpsc::UnboundedSender<()>>);
    impl Drop for Guard {
        fn drop(&mut self) {
            if let Some(dropped) = self.0.take() {
                let _ = dropped.send(());
            }
        }
    }
    let mut guard = Guard(Some(dropped));
    let response = next.run(request).await;
    guard.0 = None;
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_does_not_cut_the_handler_off_and_its_retry_replays() {
    let (payments, mut started) = Payments::held();
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let layer = IdempotencyLayer::builder(memory()).wait(hang()).build();
    let router = app(layer, payments.clone()).layer(middleware::from_fn(move |request, next| {
        report_drop(dropped_tx.clone(), request, next)
    }));
    let server = Arc::new(serve(router).await);

    let (gave_up_tx, gave_up) = oneshot::channel::<()>();
    let client = {
        let server = server.clone();
        tokio::spawn(async move {
            let request = server.post("/payments", Some("pay-1"), "{}").send();
            tokio::select! {
                _ = request => panic!("the handler is held, so no answer comes"),
                _ = gave_up => {}
            }
        })
    };
    soon(started.recv()).await.unwrap();
    gave_up_tx.send(()).unwrap();
    client.await.unwrap();
    timeout(hang(), dropped.recv())
        .await
        .expect("the server notices the disconnect")
        .unwrap();

    payments.release();
    let retry = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert_eq!(retry.status, 201);
    assert!(retry.replayed(), "the first run finished and was stored");
    assert_eq!(payments.runs(), 1);
    assert_eq!(payments.finished.load(Ordering::SeqCst), 1);
}
