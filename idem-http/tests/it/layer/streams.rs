//! Streamed responses: forwarded as they are produced, stored when they end within the limit,
//! and never run twice when they cannot be kept.

use crate::support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use idem_core::Idempotency;
use idem_http::{problem, IdempotencyLayer, DEFAULT_MAX_RESPONSE_BODY};
use support::{app, events, hang, memory, send, serve, soon, FaultyStore, Payments};
use tokio::time::timeout;

/// A handler that answers each run with the next prepared body, as server-sent events.
#[derive(Default)]
struct Streams {
    runs: AtomicUsize,
    bodies: Mutex<VecDeque<axum::body::Body>>,
}

impl Streams {
    fn answering(body: axum::body::Body) -> Arc<Self> {
        let streams = Streams::default();
        streams.bodies.lock().unwrap().push_back(body);
        Arc::new(streams)
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

async fn stream_events(State(streams): State<Arc<Streams>>) -> Response {
    streams.runs.fetch_add(1, Ordering::SeqCst);
    let body = streams.bodies.lock().unwrap().pop_front();
    let body = body.unwrap_or_else(|| axum::body::Body::from("a second run"));
    ([("content-type", "text/event-stream")], body).into_response()
}

fn events_app(layer: IdempotencyLayer, streams: Arc<Streams>) -> Router {
    Router::new()
        .route("/events", post(stream_events))
        .with_state(streams)
        .layer(layer)
}

fn event(text: &'static str) -> Result<Bytes, std::io::Error> {
    Ok(Bytes::from_static(text.as_bytes()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_event_reaches_the_client_while_the_handler_still_produces() {
    let (producer, body) = events();
    let streams = Streams::answering(body);
    let server = serve(events_app(IdempotencyLayer::new(memory()), streams.clone())).await;

    let mut response = timeout(hang(), server.post("/events", Some("sse-1"), "{}").send())
        .await
        .expect("the head comes before the stream ends")
        .unwrap();
    assert_eq!(response.status(), 200);
    producer.send(event("data: 1\n\n")).unwrap();
    let first = timeout(hang(), response.chunk())
        .await
        .expect("the first event comes while the stream is open")
        .unwrap()
        .unwrap();
    assert_eq!(first, "data: 1\n\n");
    producer.send(event("data: 2\n\n")).unwrap();
    drop(producer);
    assert_eq!(response.bytes().await.unwrap(), "data: 2\n\n");

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(retry.body, "data: 1\n\ndata: 2\n\n");
    assert_eq!(retry.header("content-type"), Some("text/event-stream"));
    assert_eq!(streams.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_its_client_abandoned_is_dropped_and_its_key_stays_handled() {
    let (producer, body) = events();
    let streams = Streams::answering(body);
    let layer = IdempotencyLayer::builder(memory())
        .wait(hang())
        .abandoned_stream_timeout(Duration::from_millis(50))
        .build();
    let server = serve(events_app(layer, streams.clone())).await;

    let mut response = timeout(hang(), server.post("/events", Some("sse-1"), "{}").send())
        .await
        .expect("the head comes before the stream ends")
        .unwrap();
    producer.send(event("data: 1\n\n")).unwrap();
    timeout(hang(), response.chunk()).await.unwrap().unwrap();
    drop(response);
    timeout(hang(), producer.closed())
        .await
        .expect("the layer stops reading a stream nobody can get");

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("sse-1"));
    assert_eq!(retry.json()["handled_status"], 200);
    assert_eq!(streams.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_stream_that_ends_in_time_is_replayed_whole() {
    let (producer, body) = events();
    let streams = Streams::answering(body);
    let layer = IdempotencyLayer::builder(memory())
        .wait(hang())
        .abandoned_stream_timeout(hang())
        .build();
    let server = serve(events_app(layer, streams.clone())).await;

    let mut response = server
        .post("/events", Some("sse-1"), "{}")
        .send()
        .await
        .unwrap();
    producer.send(event("data: 1\n\n")).unwrap();
    timeout(hang(), response.chunk()).await.unwrap().unwrap();
    drop(response);
    producer.send(event("data: 2\n\n")).unwrap();
    drop(producer);

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(retry.body, "data: 1\n\ndata: 2\n\n");
    assert_eq!(streams.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_fails_mid_stream_keeps_its_key_handled() {
    let (producer, body) = events();
    let streams = Streams::answering(body);
    let layer = IdempotencyLayer::builder(memory()).wait(hang()).build();
    let server = serve(events_app(layer, streams.clone())).await;

    producer.send(event("data: 1\n\n")).unwrap();
    producer
        .send(Err(std::io::Error::other("the upstream broke")))
        .unwrap();
    let first = server
        .post("/events", Some("sse-1"), "{}")
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    assert!(
        first.bytes().await.is_err(),
        "the client sees the body fail"
    );

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("sse-1"));
    assert_eq!(streams.runs(), 1, "no second run");
}

/// A body whose first chunk comes, and whose stream then panics.
struct PanicsAfterOneChunk(bool);

impl futures_core::Stream for PanicsAfterOneChunk {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        assert!(!self.0, "the stream broke");
        self.0 = true;
        std::task::Poll::Ready(Some(event("data: 1\n\n")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_panics_midway_never_looks_whole_to_its_client() {
    let body = axum::body::Body::from_stream(PanicsAfterOneChunk(false));
    let streams = Streams::answering(body);
    let layer = IdempotencyLayer::builder(memory()).wait(hang()).build();
    let server = serve(events_app(layer, streams.clone())).await;

    let request = server.post("/events", Some("sse-1"), "{}");
    let received = match request.send().await {
        Ok(first) => first.bytes().await.map(drop),
        Err(cut_off) => Err(cut_off),
    };
    assert!(
        received.is_err(),
        "a cut-off answer fails rather than ends as if whole"
    );

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("sse-1"));
    assert_eq!(streams.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_a_response_over_the_limit_are_not_woken_into_a_second_run() {
    const DUPLICATES: usize = 19;
    let (payments, mut started) = Payments::held();
    let len = DEFAULT_MAX_RESPONSE_BODY + 10_000;
    *payments.streamed_len.lock().unwrap() = Some(len);
    let store = Arc::new(FaultyStore::default());
    let layer = IdempotencyLayer::builder(Idempotency::from_arc(store.clone()))
        .wait(hang())
        .build();
    let server = Arc::new(serve(app(layer, payments.clone())).await);

    let first = tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}")));
    soon(started.recv()).await.unwrap();
    let duplicates: Vec<_> = (0..DUPLICATES)
        .map(|_| tokio::spawn(send(server.post("/payments", Some("pay-1"), "{}"))))
        .collect();
    timeout(hang(), store.waited(DUPLICATES)).await.unwrap();
    payments.release();

    let first = first.await.unwrap();
    assert_eq!(first.status, 201);
    assert_eq!(first.body.len(), len);
    for duplicate in duplicates {
        let duplicate = duplicate.await.unwrap();
        duplicate.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("pay-1"));
    }
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_declared_length_that_stalls_after_its_client_left_does_not_hold_the_key() {
    let (producer, body) = events();
    let body = Arc::new(Mutex::new(Some(body)));
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let handler = move || {
        let _ = started_tx.send(());
        let body = body.lock().unwrap().take();
        let body = body.unwrap_or_else(|| axum::body::Body::from("a second run"));
        async move { ([("content-length", "64")], body).into_response() }
    };
    let layer = IdempotencyLayer::builder(memory())
        .wait(hang())
        .abandoned_stream_timeout(Duration::from_millis(50))
        .build();
    let server = Arc::new(serve(Router::new().route("/slow", post(handler)).layer(layer)).await);

    let client = {
        let server = server.clone();
        tokio::spawn(async move { server.post("/slow", Some("slow-1"), "{}").send().await })
    };
    timeout(hang(), started.recv()).await.unwrap();
    client.abort();
    timeout(hang(), producer.closed())
        .await
        .expect("the layer stops reading a body nobody can get");

    let retry = send(server.post("/slow", Some("slow-1"), "{}")).await;
    retry.assert_problem(410, problem::RESPONSE_NOT_KEPT, Some("slow-1"));
    assert!(started.try_recv().is_err(), "no second run");
}

/// A streamed answer, with a header the layer does not replay.
async fn traced_stream(State(streams): State<Arc<Streams>>) -> Response {
    streams.runs.fetch_add(1, Ordering::SeqCst);
    let body = streams
        .bodies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_default();
    (
        [
            ("content-type", "text/event-stream"),
            ("x-trace", "first-run"),
        ],
        body,
    )
        .into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_at_once_reaches_its_client_as_the_handler_sent_it() {
    // Ended before the handler returns: the whole call can finish in one poll.
    let (producer, body) = events();
    drop(producer);
    let streams = Streams::answering(body);
    let router = Router::new()
        .route("/events", post(traced_stream))
        .with_state(streams.clone())
        .layer(IdempotencyLayer::new(memory()));
    let server = serve(router).await;

    let first = send(server.post("/events", Some("sse-1"), "{}")).await;
    assert_eq!(first.status, 200);
    assert!(!first.replayed(), "the first answer is the handler's own");
    assert_eq!(first.header("x-trace"), Some("first-run"));
    assert_eq!(first.body, "");

    let retry = send(server.post("/events", Some("sse-1"), "{}")).await;
    assert!(retry.replayed());
    assert_eq!(
        retry.header("x-trace"),
        None,
        "not on the replay allow-list"
    );
    assert_eq!(streams.runs(), 1);
}
