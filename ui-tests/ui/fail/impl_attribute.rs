use idem_core::{idempotent, Idempotency};

struct Stripe {
    idem: Idempotency,
}

// The arguments go on the methods.
#[idempotent(ttl = "1h")]
impl Stripe {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: String) -> Result<u64, idem_core::Error> {
        Ok(order.len() as u64)
    }
}

struct Adyen;

// No method to name.
#[idempotent]
impl Adyen {
    async fn charge(&self, order: String) -> Result<u64, idem_core::Error> {
        Ok(order.len() as u64)
    }
}

fn main() {}
