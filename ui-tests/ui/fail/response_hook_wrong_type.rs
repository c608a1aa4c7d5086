use idem_core::idempotent;

fn mark(receipt: String) -> String {
    receipt
}

#[idempotent(key = "order", response_hook = "mark")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
