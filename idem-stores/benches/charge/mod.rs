//! The function both memory-store benches make idempotent: a charge whose request serialises
//! to about 200 bytes of JSON, like a small payment API body.

use std::time::Duration;

use idem_core::{Call, Error, Fingerprint, Idempotency, Key};
use serde::{Deserialize, Serialize};

#[derive(Serialize)]
pub struct ChargeRequest {
    pub order_id: String,
    customer_id: String,
    card_token: String,
    pub amount: u64,
    currency: &'static str,
    description: String,
}

#[derive(Serialize, Deserialize)]
pub struct Receipt {
    id: String,
    amount: u64,
}

pub fn request(order: u64) -> ChargeRequest {
    ChargeRequest {
        order_id: format!("order-{order:012}"),
        customer_id: "cus_4f9a1c2e7b3d5a60".into(),
        card_token: "tok_visa_4242424242424242_exp_2030_12".into(),
        amount: 4_200,
        currency: "JPY",
        description: "Monthly subscription, premium plan, billed on the 1st".into(),
    }
}

pub async fn charge(req: &ChargeRequest) -> Result<Receipt, Error> {
    Ok(Receipt {
        id: format!("rcpt_{}", req.order_id),
        amount: req.amount,
    })
}

/// The key of a charge for `req`'s order.
pub fn key(idem: &Idempotency, req: &ChargeRequest) -> Result<Key, Error> {
    idem.key("bench::charge")
        .part(req.order_id.as_str())
        .finish()
}

/// The charge for `req`, made idempotent on `idem`, its outcome kept for `ttl`.
pub async fn idempotent_charge(
    idem: &Idempotency,
    req: &ChargeRequest,
    ttl: Duration,
) -> Result<Receipt, Error> {
    let call = Call::new(key(idem, req)?, Fingerprint::of(req)?).with_ttl(ttl);
    Ok(idem.run(call, charge(req)).await?.value)
}
