//! The problem idem solves, end to end on the in-process memory store:
//!
//! ```text
//! client -> POST /payments -> server (charge succeeds)
//! client <- timeout        <- network drops the answer
//! client -> POST /payments -> server (must NOT charge again)
//! ```
//!
//! Run with `cargo run -p idem-examples --example payments`.

mod payment_scenario;

use std::sync::Arc;

use idem_core::{idempotent, Idempotency};
use idem_stores::memory::MemoryStore;
use payment_scenario::{CardNetwork, ChargeRequest, PayError, Payments, Receipt};

/// The payment service: at most one charge per order id while the record lives (24 h). The
/// card network is a dependency, not part of the request, so it is not fingerprinted.
#[idempotent(key = "req.order_id", ttl = "24h", skip = "network")]
async fn charge(network: &CardNetwork, req: &ChargeRequest) -> Result<Receipt, PayError> {
    network.charge(req).await
}

#[derive(Default)]
struct Service {
    network: CardNetwork,
}

impl Payments for Service {
    async fn charge(&self, req: ChargeRequest) -> Result<Receipt, PayError> {
        charge(&self.network, &req).await
    }

    fn network(&self) -> &CardNetwork {
        &self.network
    }
}

#[tokio::main]
async fn main() {
    idem_core::install(Idempotency::new(MemoryStore::new()));
    payment_scenario::play(Arc::new(Service::default())).await;
}
