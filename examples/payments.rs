//! The problem idem solves, end to end on the in-process memory store:
//!
//! ```text
//! client -> POST /payments -> server (charge succeeds)
//! client <- timeout        <- network drops the answer
//! client -> POST /payments -> server (must NOT charge again)
//! ```
//!
//! Run with `cargo run -p idem-examples --example payments`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

#[derive(Debug, Serialize)]
struct ChargeRequest {
    order_id: String,
    card: String,
    amount: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Receipt {
    id: String,
    order_id: String,
    amount: u64,
}

#[derive(Debug)]
enum PayError {
    Declined,
    Idempotency(idem_core::Error),
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idempotency(error)
    }
}

impl std::fmt::Display for PayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PayError::Declined => f.write_str("card declined"),
            PayError::Idempotency(error) => {
                write!(f, "HTTP {}: {error}", error.http_status())
            }
        }
    }
}

/// A charge the card network holds until told to go on, to show a duplicate arriving mid-flight.
struct SlowCharge {
    started: Semaphore,
    proceed: Semaphore,
}

/// The card network: records every charge it makes.
#[derive(Default)]
struct CardNetwork {
    charges: Mutex<Vec<(String, u64)>>,
    slow: Mutex<HashMap<String, Arc<SlowCharge>>>,
}

impl CardNetwork {
    async fn charge(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
        let slow = self.slow.lock().unwrap().get(&req.order_id).cloned();
        if let Some(slow) = slow {
            slow.started.add_permits(1);
            slow.proceed.acquire().await.unwrap().forget();
        }
        if req.card.ends_with("0002") {
            return Err(PayError::Declined);
        }
        let mut charges = self.charges.lock().unwrap();
        charges.push((req.card.clone(), req.amount));
        Ok(Receipt {
            id: format!("rcpt_{}", charges.len()),
            order_id: req.order_id.clone(),
            amount: req.amount,
        })
    }

    fn charges_for(&self, card: &str) -> usize {
        self.charges
            .lock()
            .unwrap()
            .iter()
            .filter(|(c, _)| c == card)
            .count()
    }
}

/// The payment service: at most one charge per order id while the record lives (24 h). The
/// card network is a dependency, not part of the request, so it is not fingerprinted.
#[idempotent(key = "req.order_id", ttl = "24h", skip = "network")]
async fn charge(network: &CardNetwork, req: &ChargeRequest) -> Result<Receipt, PayError> {
    network.charge(req).await
}

fn request(order_id: &str, card: &str, amount: u64) -> ChargeRequest {
    ChargeRequest {
        order_id: order_id.into(),
        card: card.into(),
        amount,
    }
}

fn show(step: &str, result: &Result<Receipt, PayError>) {
    match result {
        Ok(receipt) => println!("{step}\n    -> {} for {} JPY", receipt.id, receipt.amount),
        Err(error) => println!("{step}\n    -> refused: {error}"),
    }
}

#[tokio::main]
async fn main() {
    idem_core::install(Idempotency::new(MemoryStore::new()));
    let network = Arc::new(CardNetwork::default());
    let card = "4242-4242-4242-4242";

    let first = charge(&network, &request("order-1001", card, 4_200)).await;
    show(
        "1. charge order-1001 (the answer is lost on the way back)",
        &first,
    );

    let retry = charge(&network, &request("order-1001", card, 4_200)).await;
    show("2. the client retries with the same key", &retry);
    assert_eq!(first.as_ref().unwrap().id, retry.as_ref().unwrap().id);
    println!(
        "    the same receipt; the card was charged {} time",
        network.charges_for(card)
    );
    assert_eq!(network.charges_for(card), 1);

    let slow = Arc::new(SlowCharge {
        started: Semaphore::new(0),
        proceed: Semaphore::new(0),
    });
    network
        .slow
        .lock()
        .unwrap()
        .insert("order-1002".into(), slow.clone());
    let in_flight = {
        let network = network.clone();
        tokio::spawn(async move { charge(&network, &request("order-1002", card, 990)).await })
    };
    slow.started.acquire().await.unwrap().forget();
    let duplicate = charge(&network, &request("order-1002", card, 990)).await;
    show(
        "3. a duplicate arrives while order-1002 is still being charged",
        &duplicate,
    );
    assert!(matches!(
        duplicate,
        Err(PayError::Idempotency(idem_core::Error::InProgress { .. }))
    ));
    slow.proceed.add_permits(1);
    show(
        "   ...the first order-1002 call finishes",
        &in_flight.await.unwrap(),
    );

    let reused = charge(&network, &request("order-1001", card, 9_999)).await;
    show(
        "4. the key of order-1001 is reused with another amount",
        &reused,
    );
    assert!(matches!(
        reused,
        Err(PayError::Idempotency(idem_core::Error::Mismatch { .. }))
    ));

    let declined_card = "4000-0000-0000-0002";
    let declined = charge(&network, &request("order-1003", declined_card, 1_500)).await;
    show(
        "5. order-1003 with a card that is declined (the key is released)",
        &declined,
    );
    let corrected = charge(&network, &request("order-1003", card, 1_500)).await;
    show(
        "6. the corrected retry of order-1003 with another card",
        &corrected,
    );
    assert!(corrected.is_ok());

    let charges = network.charges_for(card);
    println!("\ncard {card} was charged {charges} times for 3 orders: once per order.");
    assert_eq!(charges, 3);
}
