use idem_core::idempotent;

#[idempotent(key = "order", ttl = "24 hours", lease = "0s", wait = "10")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

#[idempotent(key = "order", ttl = 24h)]
async fn refund(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
