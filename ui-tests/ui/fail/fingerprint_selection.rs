use idem_core::idempotent;

#[idempotent(key = "order", fingerprint = "order, amount", skip = "db")]
async fn charge(order: String, amount: u64) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64 + amount)
}

#[idempotent(key = "order", skip = "db")]
async fn refund(order: String, amount: u64) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64 + amount)
}

fn main() {}
