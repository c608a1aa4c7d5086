//! The payment scenario both payment examples play, whatever store holds the records:
//!
//! ```text
//! client -> POST /payments -> server (charge succeeds)
//! client <- timeout        <- network drops the answer
//! client -> POST /payments -> server (must NOT charge again)
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

/// What the client sends.
#[derive(Debug, Serialize)]
pub struct ChargeRequest {
    pub order_id: String,
    pub card: String,
    pub amount: u64,
}

/// What the client gets back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub id: String,
    pub order_id: String,
    pub amount: u64,
}

#[derive(Debug)]
pub enum PayError {
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
            PayError::Idempotency(error) => write!(f, "HTTP {}: {error}", error.http_status()),
        }
    }
}

/// A charge the card network holds until told to go on, to show a duplicate arriving mid-flight.
struct SlowCharge {
    started: Semaphore,
    proceed: Semaphore,
    /// Whether the card is charged before the hold (only the answer is slow) or after it.
    charged_first: bool,
}

/// The card network: records every charge it makes.
#[derive(Default)]
pub struct CardNetwork {
    charges: Mutex<Vec<(String, u64)>>,
    slow: Mutex<HashMap<String, Arc<SlowCharge>>>,
}

impl CardNetwork {
    /// Charges the card; cards ending in `0002` are declined.
    pub async fn charge(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
        let slow = self.slow.lock().unwrap().get(&req.order_id).cloned();
        let charged_first = slow.as_ref().is_some_and(|slow| slow.charged_first);
        let receipt = if charged_first {
            Some(self.record(req)?)
        } else {
            None
        };
        if let Some(slow) = slow {
            slow.started.add_permits(1);
            slow.proceed.acquire().await.unwrap().forget();
        }
        match receipt {
            Some(receipt) => Ok(receipt),
            None => self.record(req),
        }
    }

    fn record(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
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
        let charges = self.charges.lock().unwrap();
        charges.iter().filter(|(c, _)| c == card).count()
    }

    fn hold(&self, order_id: &str, charged_first: bool) -> Arc<SlowCharge> {
        let slow = Arc::new(SlowCharge {
            started: Semaphore::new(0),
            proceed: Semaphore::new(0),
            charged_first,
        });
        self.slow
            .lock()
            .unwrap()
            .insert(order_id.into(), slow.clone());
        slow
    }
}

/// A payment service whose `charge` is idempotent.
pub trait Payments: Send + Sync + 'static {
    /// The idempotent charge.
    fn charge(&self, req: ChargeRequest) -> impl Future<Output = Result<Receipt, PayError>> + Send;
    /// The card network it charges.
    fn network(&self) -> &CardNetwork;
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

/// Plays the scenario, printing each step and checking that the card is charged once per order.
pub async fn play(payments: Arc<impl Payments>) {
    let card = "4242-4242-4242-4242";

    let first = payments.charge(request("order-1001", card, 4_200)).await;
    show(
        "1. charge order-1001 (the answer is lost on the way back)",
        &first,
    );

    let retry = payments.charge(request("order-1001", card, 4_200)).await;
    show("2. the client retries with the same key", &retry);
    assert_eq!(first.as_ref().unwrap(), retry.as_ref().unwrap());
    let charged = payments.network().charges_for(card);
    println!("    the same receipt; the card was charged {charged} time");
    assert_eq!(charged, 1);

    let slow = payments.network().hold("order-1002", false);
    let in_flight = {
        let payments = payments.clone();
        tokio::spawn(async move { payments.charge(request("order-1002", card, 990)).await })
    };
    slow.started.acquire().await.unwrap().forget();
    let duplicate = payments.charge(request("order-1002", card, 990)).await;
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

    let reused = payments.charge(request("order-1001", card, 9_999)).await;
    show(
        "4. the key of order-1001 is reused with another amount",
        &reused,
    );
    assert!(matches!(
        reused,
        Err(PayError::Idempotency(idem_core::Error::Mismatch { .. }))
    ));

    let declined_card = "4000-0000-0000-0002";
    let declined = payments
        .charge(request("order-1003", declined_card, 1_500))
        .await;
    show(
        "5. order-1003 with a card that is declined (the key is released)",
        &declined,
    );
    assert!(matches!(declined, Err(PayError::Declined)));
    let corrected = payments.charge(request("order-1003", card, 1_500)).await;
    show(
        "6. the corrected retry of order-1003 with another card",
        &corrected,
    );
    assert!(corrected.is_ok());

    let answer_lost = payments.network().hold("order-1004", true);
    let disconnected = {
        let payments = payments.clone();
        tokio::spawn(async move { payments.charge(request("order-1004", card, 2_500)).await })
    };
    answer_lost.started.acquire().await.unwrap().forget();
    disconnected.abort();
    let _ = disconnected.await;
    println!("7. order-1004 is charged, then the client disconnects and the server drops the call");
    let retry = payments.charge(request("order-1004", card, 2_500)).await;
    show(
        "8. the client retries order-1004 at once (the key is held: on_abort = \"hold\")",
        &retry,
    );
    let Err(PayError::Idempotency(idem_core::Error::InProgress { retry_after, .. })) = retry else {
        panic!("a dropped call must hold its key, got {retry:?}");
    };
    println!(
        "    retry after {} s, once the lease passes; the card was charged once for it",
        retry_after.as_secs_f64().ceil()
    );

    let charges = payments.network().charges_for(card);
    println!("\ncard {card} was charged {charges} times for 4 orders: once per order.");
    assert_eq!(charges, 4);
}
