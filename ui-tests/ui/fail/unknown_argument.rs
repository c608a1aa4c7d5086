use idem_core::idempotent;

#[idempotent(keys = "order", ttl = "24h")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
