use idem_core::idempotent;

#[idempotent(key = "order", ttl = "24h", ttl = "1h")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
