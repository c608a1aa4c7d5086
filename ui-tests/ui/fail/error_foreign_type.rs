use idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(order: String) -> Result<u64, String> {
    Ok(order.len() as u64)
}

fn main() {}
