use idem_core::idempotent;

#[idempotent(key = "\"fixed\"")]
async fn charge((order, amount): (String, u64)) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64 + amount)
}

fn main() {}
