use idem_core::{idempotent, Idempotency};

struct Stripe {
    idem: Idempotency,
}

// A method is named after its impl, which its own attribute cannot see.
impl Stripe {
    #[idempotent(store = "self.idem", key = "order", skip = "self")]
    async fn charge(&self, order: String) -> Result<u64, idem_core::Error> {
        Ok(order.len() as u64)
    }
}

fn main() {}
