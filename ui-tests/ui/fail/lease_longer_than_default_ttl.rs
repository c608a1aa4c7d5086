use idem_core::idempotent;

// With no `ttl`, `lease` is checked against `idem_core::DEFAULT_TTL`.
#[idempotent(key = "order", lease = "2d")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
