//! Compressed answers: replayed with what decodes them, and where a compression layer belongs.

use crate::support;

use std::sync::Arc;

use idem_http::{problem, IdempotencyLayer};
use support::{memory, routes, send, serve, Payments};
use tower_http::compression::CompressionLayer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compressed_answer_is_replayed_with_its_encoding_to_retries_that_accept_it() {
    let payments = Arc::new(Payments::default());
    // Compression inside the idempotency layer: the stored body is gzip.
    let router = routes(payments.clone())
        .layer(CompressionLayer::new())
        .layer(IdempotencyLayer::new(memory()));
    let server = serve(router).await;
    let accepting = |encoding: Option<&str>| {
        let request = server.post("/payments", Some("pay-1"), "{}");
        match encoding {
            Some(encoding) => request.header("accept-encoding", encoding),
            None => request,
        }
    };

    let first = send(accepting(Some("gzip"))).await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("content-encoding"), Some("gzip"));
    let retry = send(accepting(Some("gzip, br"))).await;
    assert!(retry.replayed());
    assert_eq!(retry.header("content-encoding"), Some("gzip"));
    assert_eq!(retry.header("vary"), first.header("vary"));
    assert_eq!(retry.body, first.body);

    let plain_client = send(accepting(Some("identity"))).await;
    plain_client.assert_problem(406, problem::ENCODING_NOT_ACCEPTED, Some("pay-1"));
    assert!(plain_client.json()["detail"]
        .as_str()
        .unwrap()
        .contains("gzip"));
    assert!(
        send(accepting(None)).await.replayed(),
        "no Accept-Encoding accepts any"
    );
    assert_eq!(payments.runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compression_outside_the_layer_encodes_each_replay_as_its_retry_asks() {
    let payments = Arc::new(Payments::default());
    let router = routes(payments.clone())
        .layer(IdempotencyLayer::new(memory()))
        .layer(CompressionLayer::new());
    let server = serve(router).await;

    let first = send(
        server
            .post("/payments", Some("pay-1"), "{}")
            .header("accept-encoding", "gzip"),
    )
    .await;
    assert_eq!(first.header("content-encoding"), Some("gzip"));
    let plain = send(server.post("/payments", Some("pay-1"), "{}")).await;
    assert!(plain.replayed());
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.json()["payment"], 1);
    assert_eq!(payments.runs(), 1);
}
