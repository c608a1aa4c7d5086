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

mod local_dynamodb;
mod payment_scenario;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use idem_core::{idempotent, Idempotency};
use idem_stores::dynamodb::DynamoDbStore;
use payment_scenario::{CardNetwork, ChargeRequest, PayError, Payments, Receipt};

const ENDPOINT_VAR: &str = "IDEM_DYNAMODB_ENDPOINT";
const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8000";

/// The payment service: at most one charge per order id while the record lives (24 h).
struct Service {
    idem: Idempotency,
    network: CardNetwork,
}

impl Service {
    #[idempotent(
        store = "self.idem",
        key = "req.order_id",
        name = "payments.charge",
        skip = "self"
    )]
    async fn charge(&self, req: &ChargeRequest) -> Result<Receipt, PayError> {
        self.network.charge(req).await
    }
}

impl Payments for Service {
    async fn charge(&self, req: ChargeRequest) -> Result<Receipt, PayError> {
        Service::charge(self, &req).await
    }

    fn network(&self) -> &CardNetwork {
        &self.network
    }
}

#[tokio::main]
async fn main() {
    let endpoint = std::env::var(ENDPOINT_VAR).unwrap_or_else(|_| DEFAULT_ENDPOINT.into());
    let client = local_dynamodb::client(&endpoint);
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

    payment_scenario::play(Arc::new(Service {
        idem: Idempotency::new(store.clone()),
        network: CardNetwork::default(),
    }))
    .await;

    if let Err(error) = client.delete_table().table_name(store.table()).send().await {
        eprintln!("could not delete table {}: {error}", store.table());
    }
}
