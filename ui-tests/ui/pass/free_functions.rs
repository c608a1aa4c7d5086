//! Free functions with every argument of the attribute.

use idem_core::{idempotent, Idempotency};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Customer {
    id: u64,
}

#[derive(Serialize, Deserialize)]
struct ChargeRequest {
    order_id: String,
    customer: Customer,
    amount: u64,
}

#[derive(Serialize, Deserialize)]
struct Receipt {
    id: String,
}

#[derive(Debug, Serialize, Deserialize)]
enum PayError {
    Declined,
    Idem(String),
}

impl PayError {
    fn is_final(&self) -> bool {
        matches!(self, PayError::Declined)
    }
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idem(error.to_string())
    }
}

struct Db;

#[idempotent(key = "req.order_id + op", ttl = "24h")]
async fn charge(req: &ChargeRequest, op: &str) -> Result<Receipt, PayError> {
    Ok(Receipt {
        id: format!("{}-{op}-{}", req.order_id, req.amount),
    })
}

#[idempotent(
    key = r#"req.customer.id + "-" + req.order_id"#,
    ttl = "2d",
    lease = "10s",
    on_abort = "fail",
    wait = "500ms",
    scope = "tenant",
    skip = "db",
    store_err = "PayError::is_final",
    name = "payments::charge_v2"
)]
async fn charge_v2(db: &Db, tenant: String, req: ChargeRequest) -> Result<Receipt, PayError> {
    let _ = db;
    if req.amount == 0 {
        return Err(PayError::Declined);
    }
    Ok(Receipt { id: tenant })
}

#[idempotent(
    fingerprint = "order",
    store = "idem",
    store_err = "|e: &PayError| e.is_final()"
)]
async fn by_fingerprint(idem: &Idempotency, order: u64, note: String) -> Result<u64, PayError> {
    let _ = note;
    Ok(order)
}

#[idempotent(key = "order", ttl = "10m")]
async fn mutable_argument(mut order: String) -> Result<usize, idem_core::Error> {
    order.push('!');
    let len = order.len();
    Ok(len)
}

#[idempotent(key = "id")]
async fn with_wildcard(id: u64, _: &str) -> Result<u64, idem_core::Error> {
    Ok(id)
}

#[idempotent]
async fn keyless_with_wildcard(id: u64, _: &str) -> Result<u64, idem_core::Error> {
    Ok(id)
}

#[derive(serde::Serialize)]
struct Typed {
    r#type: String,
}

// Raw identifiers, as generated code (prost) writes them.
#[idempotent(key = "req.r#type + r#ref", scope = "r#ref")]
async fn typed(req: &Typed, r#ref: &str) -> Result<usize, idem_core::Error> {
    Ok(req.r#type.len() + r#ref.len())
}

#[idempotent(key = "\"rotate_keys\"")]
async fn rotate_keys() -> Result<u64, idem_core::Error> {
    Ok(1)
}

fn main() {
    let _ = with_wildcard(1, "a");
    let _ = keyless_with_wildcard(1, "a");
    let _ = rotate_keys();
    let _ = typed(&Typed { r#type: String::new() }, "");
    let req = ChargeRequest {
        order_id: "o-1".into(),
        customer: Customer { id: 7 },
        amount: 1,
    };
    let _ = charge(&req, "charge");
    let _ = charge_v2(&Db, "acme".into(), req);
    let idem = Idempotency::new(idem_stores::memory::MemoryStore::new());
    let _ = by_fingerprint(&idem, 1, String::new());
    let _ = mutable_argument("o-1".into());
}
