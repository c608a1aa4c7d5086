use idem_core::idempotent;

#[idempotent(key = "order", ttl = "30s", lease = "1m")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
