use idem_core::idempotent;

struct Request {
    order_id: String,
}

#[idempotent(key = "req.order_id + customer")]
async fn charge(req: &Request, amount: u64) -> Result<u64, idem_core::Error> {
    Ok(req.order_id.len() as u64 + amount)
}

fn main() {}
