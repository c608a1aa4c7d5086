//! An `#[idempotent]` function's error inside a handler, answered by
//! `problem::response_for` as the layer answers for its own key.

use crate::support;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use idem_core::{idempotent, Idempotency};
use idem_http::problem;
use support::{memory, send, serve, soon};
use tokio::sync::{mpsc, Semaphore};

/// A shop whose charges wait for a permit, and say when one has started.
struct Shop {
    idem: Idempotency,
    started: mpsc::UnboundedSender<()>,
    go: Semaphore,
}

#[idempotent(key = "order", store = "shop.idem")]
async fn charge(shop: &Shop, order: &str, amount: u64) -> Result<String, idem_core::Error> {
    let _ = shop.started.send(());
    shop.go
        .acquire()
        .await
        .expect("the shop stays open")
        .forget();
    Ok(format!("charged {amount} for {order}"))
}

async fn pay(
    State(shop): State<Arc<Shop>>,
    Path((order, amount)): Path<(String, u64)>,
) -> Response {
    match charge(&shop, &order, amount).await {
        Ok(receipt) => receipt.into_response(),
        Err(error) => problem::response_for(&error).into_response(),
    }
}

/// A server for the shop; the receiver hears of every charge that starts.
async fn shop(permits: usize) -> (support::Server, Arc<Shop>, mpsc::UnboundedReceiver<()>) {
    let (started, heard) = mpsc::unbounded_channel();
    let shop = Arc::new(Shop {
        idem: memory(),
        started,
        go: Semaphore::new(permits),
    });
    let app = Router::new()
        .route("/orders/{order}/{amount}", post(pay))
        .with_state(shop.clone());
    (serve(app).await, shop, heard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_in_flight_gets_the_layers_409_with_retry_after() {
    let (server, shop, mut heard) = shop(0).await;
    let url = format!("{}/orders/o-1/100", server.url);
    let first = tokio::spawn(send(server.client.post(url.clone())));
    soon(heard.recv()).await.unwrap();

    let duplicate = send(server.client.post(url)).await;
    duplicate.assert_problem(409, problem::IN_PROGRESS, None);
    assert_eq!(duplicate.header("retry-after"), Some("1"));

    shop.go.add_permits(1);
    let first = first.await.unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(first.body, "charged 100 for o-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_order_gets_the_layers_422_without_the_internal_key() {
    let (server, _shop, _heard) = shop(10).await;
    let first = send(server.client.post(format!("{}/orders/o-2/100", server.url))).await;
    assert_eq!(first.status, 200);

    let other_amount = send(server.client.post(format!("{}/orders/o-2/200", server.url))).await;
    other_amount.assert_problem(422, problem::KEY_REUSED, None);
    let detail = other_amount.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        !detail.contains("o-2") && !detail.contains('|'),
        "the stored key is the application's, not the client's: {detail}"
    );
    assert_eq!(other_amount.header("retry-after"), None);
}
