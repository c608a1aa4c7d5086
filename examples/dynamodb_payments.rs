//! The payment scenario on DynamoDB: the record that stops a second charge lives in a table,
//! so it holds across processes and restarts.
//!
//! ```text
//! client -> POST /payments -> server (charge succeeds)
//! client <- timeout        <- network drops the answer
//! client -> POST /payments -> server (must NOT charge again)
//! ```
//!
//! Runs against the DynamoDB-compatible endpoint in `IDEM_DYNAMODB_ENDPOINT` (plain HTTP: moto,
//! DynamoDB Local, LocalStack), default `http://127.0.0.1:8000`. For example:
//!
//! ```text
//! ~/.cache/idem-services/venv/bin/moto_server -H 127.0.0.1 -p 8000 &   # scripts/services.sh installs it
//! IDEM_DYNAMODB_ENDPOINT=http://127.0.0.1:8000 \
//!     cargo run -p idem-examples --features dynamodb --example dynamodb_payments
//! ```
//!
//! Against AWS itself, build the client from `aws-config` instead (credentials, region, TLS);
//! the store does not care how its client was configured. Each run uses a table of its own and
//! deletes it at the end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::Client;
use idem_core::{idempotent, Idempotency};
use idem_stores::dynamodb::DynamoDbStore;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

const ENDPOINT_VAR: &str = "IDEM_DYNAMODB_ENDPOINT";
const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8000";

#[derive(Debug, Serialize)]
struct ChargeRequest {
    order_id: String,
    card: String,
    amount: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
            PayError::Idempotency(error) => write!(f, "HTTP {}: {error}", error.http_status()),
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
        let charges = self.charges.lock().unwrap();
        charges.iter().filter(|(c, _)| c == card).count()
    }
}

/// The payment service: at most one charge per order id while the record lives (24 h).
struct Payments {
    idem: Idempotency,
    network: CardNetwork,
}

impl Payments {
    #[idempotent(store = "self.idem", key = "req.order_id", name = "payments.charge")]
    async fn charge(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
        self.network.charge(req).await
    }
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

/// A client for a local DynamoDB-compatible endpoint: plain HTTP, credentials from the
/// environment or dummy ones (local servers accept any), region `us-east-1` unless `AWS_REGION`
/// says otherwise.
fn client(endpoint: &str) -> Client {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let credentials = Credentials::new(
        env("AWS_ACCESS_KEY_ID", "local"),
        env("AWS_SECRET_ACCESS_KEY", "local"),
        std::env::var("AWS_SESSION_TOKEN").ok(),
        None,
        "example",
    );
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(env("AWS_REGION", "us-east-1")))
        .credentials_provider(credentials)
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .build();
    Client::from_conf(config)
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var(ENDPOINT_VAR).unwrap_or_else(|_| DEFAULT_ENDPOINT.into());
    let client = client(&endpoint);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let store = DynamoDbStore::new(client.clone(), format!("idem-payments-{millis}"));
    if let Err(error) = store.create_table().await {
        eprintln!(
            "cannot use the DynamoDB endpoint {endpoint}: {error}\n\n\
             Start one and point {ENDPOINT_VAR} at it, for example:\n    \
             ~/.cache/idem-services/venv/bin/moto_server -H 127.0.0.1 -p 8000 &\n    \
             {ENDPOINT_VAR}=http://127.0.0.1:8000 cargo run -p idem-examples --features dynamodb --example dynamodb_payments\n\
             (scripts/services.sh installs moto_server)"
        );
        std::process::exit(2);
    }
    println!("table {} on {endpoint}\n", store.table());

    let payments = Arc::new(Payments {
        idem: Idempotency::new(store.clone()),
        network: CardNetwork::default(),
    });
    let card = "4242-4242-4242-4242";

    let first = payments.charge(&request("order-1001", card, 4_200)).await;
    show(
        "1. charge order-1001 (the answer is lost on the way back)",
        &first,
    );

    let retry = payments.charge(&request("order-1001", card, 4_200)).await;
    show("2. the client retries with the same key", &retry);
    assert_eq!(first.as_ref().unwrap(), retry.as_ref().unwrap());
    let charged = payments.network.charges_for(card);
    println!("    the same receipt; the card was charged {charged} time");
    assert_eq!(charged, 1);

    let slow = Arc::new(SlowCharge {
        started: Semaphore::new(0),
        proceed: Semaphore::new(0),
    });
    payments
        .network
        .slow
        .lock()
        .unwrap()
        .insert("order-1002".into(), slow.clone());
    let in_flight = {
        let payments = payments.clone();
        tokio::spawn(async move { payments.charge(&request("order-1002", card, 990)).await })
    };
    slow.started.acquire().await.unwrap().forget();
    let duplicate = payments.charge(&request("order-1002", card, 990)).await;
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

    let reused = payments.charge(&request("order-1001", card, 9_999)).await;
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
        .charge(&request("order-1003", declined_card, 1_500))
        .await;
    show(
        "5. order-1003 with a card that is declined (the key is released)",
        &declined,
    );
    assert!(matches!(declined, Err(PayError::Declined)));
    let corrected = payments.charge(&request("order-1003", card, 1_500)).await;
    show(
        "6. the corrected retry of order-1003 with another card",
        &corrected,
    );
    assert!(corrected.is_ok());

    let charges = payments.network.charges_for(card);
    println!("\ncard {card} was charged {charges} times for 3 orders: once per order.");
    assert_eq!(charges, 3);

    if let Err(error) = client.delete_table().table_name(store.table()).send().await {
        eprintln!("could not delete table {}: {error}", store.table());
    }
}
