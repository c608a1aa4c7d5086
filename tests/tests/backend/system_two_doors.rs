//! Seam: the attribute (`#[idempotent]`, idem-macros and idem-core) ↔ the HTTP layer
//! (idem-http) ↔ the Redis store ↔ idem-client ↔ the `idem` command.
//!
//! One operation, a charge, comes in through two doors on one store: an HTTP request behind
//! the layer, whose handler calls an `#[idempotent]` charge function, and a direct call of that
//! function (a queue consumer, say). The layer keys the request (`Idempotency-Key`, scoped by
//! `Authorization`) and the attribute keys the charge (the order): two records, by design. A
//! retried request is replayed by the layer without running the handler; a new request for the
//! same order (a client that lost its key) runs the handler, whose charge is replayed by the
//! attribute; the direct call is replayed too. The card is charged once, and `idem` shows both
//! kinds of record.

use crate::system;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use idem_client::{key_of, was_replayed};
use idem_core::{idempotent, Idempotency};
use idem_http::IdempotencyLayer;
use idem_test_servers::proxy::{Fault, Proxy};
use idem_test_servers::redis::target::RedisTarget;
use serde::{Deserialize, Serialize};
use serde_json::json;
use crate::system::command::Idem;
use crate::system::within;
use tokio::net::TcpListener;

/// The charge function's state: the handle on the shared store, and how often the card was
/// really charged.
struct Charges {
    idem: Idempotency,
    card_charged: AtomicUsize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Receipt {
    charge: String,
    order: String,
    amount: u64,
}

#[idempotent(store = "charges.idem", key = "order", name = "shop.charge")]
async fn charge(charges: &Charges, order: &str, amount: u64) -> Result<Receipt, idem_core::Error> {
    let charge = charges.card_charged.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(Receipt {
        charge: format!("ch_{charge}"),
        order: order.to_owned(),
        amount,
    })
}

/// The server: its handler parses the order and calls the charge function.
struct Shop {
    charges: Charges,
    handled: AtomicUsize,
}

#[derive(Deserialize)]
struct Order {
    order: String,
    amount: u64,
}

async fn pay(State(shop): State<Arc<Shop>>, body: String) -> (StatusCode, String) {
    shop.handled.fetch_add(1, Ordering::SeqCst);
    let order: Order = serde_json::from_str(&body).unwrap();
    match charge(&shop.charges, &order.order, order.amount).await {
        Ok(receipt) => (
            StatusCode::CREATED,
            serde_json::to_string(&receipt).unwrap(),
        ),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
    }
}

async fn serve(shop: Arc<Shop>) -> SocketAddr {
    let layer = IdempotencyLayer::new(shop.charges.idem.clone());
    let app = Router::new()
        .route("/orders", post(pay))
        .with_state(shop)
        .layer(layer);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn one_charge_through_the_layer_and_the_attribute_with_both_records_listed() {
    let Some(target) = RedisTarget::start().await else {
        return;
    };
    let shop = Arc::new(Shop {
        charges: Charges {
            idem: Idempotency::new(target.redis_store().clone()),
            card_charged: AtomicUsize::new(0),
        },
        handled: AtomicUsize::new(0),
    });
    let proxy = Proxy::start(serve(shop.clone()).await).await;
    let client = system::client();
    let order = json!({"order": "o-1", "amount": 1250}).to_string();
    let send = |key: Option<&'static str>| {
        let mut request = client
            .post(format!("{}/orders", proxy.url))
            .header("content-type", "application/json")
            .body(order.clone());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        within("the answer", request.send())
    };

    // The answer is lost; the client's retry is replayed by the layer.
    proxy.plan([Fault::LoseAnswer]);
    let first = send(None).await.unwrap();
    assert_eq!((first.status().as_u16(), was_replayed(&first)), (201, true));
    let first_key = key_of(&first).unwrap().to_owned();
    let receipt: Receipt = serde_json::from_str(&first.text().await.unwrap()).unwrap();
    assert_eq!(receipt.charge, "ch_1");
    assert_eq!(proxy.lost(), 1);
    assert_eq!(
        shop.handled.load(Ordering::SeqCst),
        1,
        "the retry did not reach the handler"
    );

    // The same order under another key: the layer runs the handler, the attribute replays.
    let rekeyed = send(Some("lost-my-key-1")).await.unwrap();
    assert_eq!(
        (rekeyed.status().as_u16(), was_replayed(&rekeyed)),
        (201, false)
    );
    let again: Receipt = serde_json::from_str(&rekeyed.text().await.unwrap()).unwrap();
    assert_eq!(again, receipt);
    assert_eq!(shop.handled.load(Ordering::SeqCst), 2);

    // The other door: the function called directly gets the same receipt.
    assert_eq!(charge(&shop.charges, "o-1", 1250).await.unwrap(), receipt);
    assert_eq!(
        shop.charges.card_charged.load(Ordering::SeqCst),
        1,
        "one charge"
    );

    // Two layer records (one per request key) and one charge record, all completed.
    let idem = Idem::redis(target.url(), target.prefix());
    let records = idem.list().await;
    let mut functions: Vec<&str> = records
        .iter()
        .map(|record| record["function"].as_str().unwrap())
        .collect();
    functions.sort();
    assert_eq!(functions, ["http", "http", "shop.charge"], "{records:#?}");
    for record in &records {
        assert_eq!(
            (&record["state"], &record["outcome"]),
            (&json!("completed"), &json!("ok")),
            "{record:#}"
        );
    }
    for key in [first_key.as_str(), "lost-my-key-1", "o-1"] {
        let holding = records
            .iter()
            .filter(|record| record["key"].as_str().unwrap().contains(key))
            .count();
        assert_eq!(holding, 1, "one record's key holds {key}: {records:#?}");
    }
    let stats = idem.json(&["stats", "--function", "shop.charge"]).await;
    assert_eq!(stats["total"], 1, "{stats:#}");
}

idem_tests::module_tests! {
    async one_charge_through_the_layer_and_the_attribute_with_both_records_listed,
}
