use idem_core::idempotent;

#[idempotent(skip = "order")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
