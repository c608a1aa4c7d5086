use idem_core::idempotent;

#[idempotent(key = "order", on_abort = "later")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

#[idempotent(key = "order", on_abort = Hold)]
async fn refund(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
