//! Generated code adds no warnings to a crate that denies them.
#![deny(warnings, unused_qualifications, clippy::all)]

use idem_core::{idempotent, Idempotency};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
pub enum PayError {
    Declined,
    Idem(u16),
}

impl PayError {
    fn is_final(&self) -> bool {
        matches!(self, PayError::Declined)
    }
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idem(error.http_status())
    }
}

pub struct Payments {
    idem: Idempotency,
}

#[idempotent]
impl Payments {
    #[idempotent(
        store = "self.idem",
        key = "order",
        skip = "self",
        wait = "1s",
        on_abort = "release",
        store_err = "PayError::is_final"
    )]
    pub async fn charge(&self, order: &str, amount: u64) -> Result<u64, PayError> {
        if amount == 0 {
            return Err(PayError::Declined);
        }
        Ok(amount)
    }
}

#[idempotent(ttl = "1h", lease = "5s")]
pub async fn refund(order: u64) -> Result<u64, PayError> {
    Ok(order)
}

#[async_trait::async_trait]
pub trait Notify {
    async fn notify(&self, order: String, amount: u64) -> Result<u64, PayError>;
}

// Under `#[async_trait]`, a fingerprinted argument the body ignores does not warn.
#[async_trait::async_trait]
#[idempotent]
impl Notify for Payments {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn notify(&self, order: String, amount: u64) -> Result<u64, PayError> {
        Ok(order.len() as u64)
    }
}

fn main() {
    let payments = Payments {
        idem: Idempotency::new(idem_stores::memory::MemoryStore::new()),
    };
    drop(payments.charge("o-1", 1));
    drop(refund(1));
}
