use idem_core::idempotent;

struct Request {
    order_id: String,
}

impl Request {
    fn id(&self) -> &str {
        &self.order_id
    }
}

#[idempotent(key = "req.id() + amount * 2")]
async fn charge(req: &Request, amount: u64) -> Result<u64, idem_core::Error> {
    Ok(req.order_id.len() as u64 + amount)
}

fn main() {}
