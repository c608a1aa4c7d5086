//! Trait impls: native `async fn` in traits and `#[async_trait]`, with `#[idempotent]` on the impl
//! before or after `#[async_trait]`.

use async_trait::async_trait;
use idem_core::{idempotent, Idempotency};

trait Charger {
    async fn charge(&self, order: String, amount: u64) -> Result<u64, idem_core::Error>;
}

#[async_trait]
trait SendCharger: Send + Sync {
    async fn charge(&self, order: String, amount: u64) -> Result<u64, idem_core::Error>;
    async fn refund(&self, order: &str) -> Result<(), idem_core::Error>;
}

struct Stripe {
    idem: Idempotency,
}

#[idempotent]
impl Charger for Stripe {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: String, amount: u64) -> Result<u64, idem_core::Error> {
        Ok(amount + order.len() as u64)
    }
}

#[idempotent]
#[async_trait]
impl SendCharger for Stripe {
    #[idempotent(store = "self.idem", key = "order", ttl = "1h", skip = "self")]
    async fn charge(&self, order: String, amount: u64) -> Result<u64, idem_core::Error> {
        Ok(amount + order.len() as u64 + self.idem.store().is_empty() as u64)
    }

    #[idempotent(store = "self.idem", key = "\"refund-\" + order", skip = "self")]
    async fn refund(&self, order: &str) -> Result<(), idem_core::Error> {
        if order.is_empty() {
            return Err(idem_core::Error::NotInstalled);
        }
        Ok(())
    }
}

trait StoreExt {
    fn is_empty(&self) -> bool;
}

impl StoreExt for std::sync::Arc<dyn idem_core::store::Store> {
    fn is_empty(&self) -> bool {
        true
    }
}

fn main() {
    let stripe = Stripe {
        idem: Idempotency::new(idem_stores::memory::MemoryStore::new()),
    };
    drop(Charger::charge(&stripe, "o-1".into(), 1));
    let dynamic: Box<dyn SendCharger> = Box::new(stripe);
    let future: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>> =
        dynamic.charge("o-1".into(), 1);
    drop(future);
    drop(dynamic.refund("o-1"));
}
