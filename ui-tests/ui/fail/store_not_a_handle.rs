use idem_core::idempotent;

struct App {
    name: String,
}

#[idempotent]
impl App {
    #[idempotent(store = "self.name", key = "order", skip = "self")]
    async fn charge(&self, order: String) -> Result<u64, idem_core::Error> {
        Ok(order.len() as u64)
    }
}

fn main() {}
