//! `idem_http_requests_total{outcome}` counts what the layer did with each request, next to the
//! engine's own `idem_calls_total` for the layer's calls.

use std::sync::Arc;

use idem_http::IdempotencyLayer;
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use crate::support::{app, memory, send, serve, soon, Payments};

// One thread runs the test, its servers and its clients, so that the recorder can be this
// thread's: the other tests of the binary, on threads of their own, count nothing into it.
#[tokio::test(flavor = "current_thread")]
async fn every_request_is_counted_by_what_the_layer_did_with_it() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _local = metrics::set_default_local_recorder(&recorder);

    let (payments, mut started) = Payments::held();
    let layer = IdempotencyLayer::builder(memory())
        .max_request_body(64)
        .build();
    let server = serve(app(layer, Arc::clone(&payments))).await;

    let first = tokio::spawn(send(server.post(
        "/payments",
        Some("k1"),
        r#"{"amount":1}"#,
    )));
    soon(started.recv()).await.unwrap();
    let duplicate = send(server.post("/payments", Some("k1"), r#"{"amount":1}"#)).await;
    assert_eq!(duplicate.status, 409);
    payments.release();
    assert_eq!(first.await.unwrap().status, 201);
    let replay = send(server.post("/payments", Some("k1"), r#"{"amount":1}"#)).await;
    assert!(replay.replayed());
    let mismatch = send(server.post("/payments", Some("k1"), r#"{"amount":2}"#)).await;
    assert_eq!(mismatch.status, 422);
    let too_large = send(server.post("/payments", Some("k2"), &"x".repeat(65))).await;
    assert_eq!(too_large.status, 413);
    let invalid = send(server.post("/payments", Some(""), "{}")).await;
    assert_eq!(invalid.status, 400);
    let unkeyed = send(server.post("/payments", None, "{}"));
    payments.release();
    assert_eq!(unkeyed.await.status, 201);
    soon(started.recv()).await.unwrap(); // the unkeyed request's run
    let anonymous = server
        .client
        .post(format!("{}/payments", server.url))
        .header("authorization", "")
        .header("idempotency-key", "k3");
    assert_eq!(send(anonymous).await.status, 400);

    // A client that goes away while its request runs: the layer's future is dropped.
    let mut router = app(IdempotencyLayer::new(memory()), Arc::clone(&payments));
    let request = axum::http::Request::post("/payments")
        .header("authorization", "Bearer gone")
        .header("idempotency-key", "k4")
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let mut answering = Box::pin(tower_service::Service::call(&mut router, request));
    tokio::select! {
        _ = &mut answering => panic!("the held handler answered"),
        _ = started.recv() => {}
    }
    drop(answering);

    // Taken while that request's handler is still held: it runs on, and counts once it ends.
    let snapshot = snapshotter.snapshot().into_vec();
    payments.release();
    let counter = |name: &str, labels: &[(&str, &str)]| -> u64 {
        snapshot
            .iter()
            .filter(|(key, ..)| {
                let key = key.key();
                key.name() == name
                    && labels
                        .iter()
                        .all(|(k, v)| key.labels().any(|l| l.key() == *k && l.value() == *v))
            })
            .map(|(.., value)| match value {
                DebugValue::Counter(n) => *n,
                other => panic!("{name}: {other:?}"),
            })
            .sum()
    };
    let requests = |outcome| counter("idem_http_requests_total", &[("outcome", outcome)]);
    assert_eq!(requests("executed"), 1);
    assert_eq!(requests("in_progress"), 1);
    assert_eq!(requests("replayed"), 1);
    assert_eq!(requests("mismatch"), 1);
    assert_eq!(requests("too_large"), 1);
    assert_eq!(requests("key_refused"), 1);
    assert_eq!(requests("passed_through"), 1);
    assert_eq!(requests("scope_refused"), 1);
    assert_eq!(requests("disconnected"), 1);
    assert_eq!(counter("idem_http_requests_total", &[]), 9);

    let calls = |outcome| {
        counter(
            "idem_calls_total",
            &[("function", "http"), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("executed"), 1);
    assert_eq!(calls("in_progress"), 1);
    assert_eq!(calls("replayed"), 1);
    assert_eq!(calls("mismatch"), 1);

    // A layer named for its API is measured under its name, apart from the other.
    let refunds = IdempotencyLayer::builder(memory()).name("refunds").build();
    let refunds = serve(app(refunds, Arc::new(Payments::default()))).await;
    assert_eq!(
        send(refunds.post("/payments", Some("k1"), "{}"))
            .await
            .status,
        201
    );
    let snapshot = snapshotter.snapshot().into_vec();
    let named = |function: &str| {
        snapshot
            .iter()
            .filter(|(key, ..)| {
                let key = key.key();
                key.name() == "idem_calls_total"
                    && key
                        .labels()
                        .any(|l| l.key() == "function" && l.value() == function)
                    && key.labels().any(|l| l.value() == "executed")
            })
            .map(|(.., value)| match value {
                DebugValue::Counter(n) => *n,
                other => panic!("{other:?}"),
            })
            .sum::<u64>()
    };
    assert_eq!(named("refunds"), 1);
    assert_eq!(named("http"), 1, "the first layer's own run, and no more");
}
