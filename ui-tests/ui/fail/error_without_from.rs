use idem_core::idempotent;

#[derive(Debug)]
enum PayError {
    Declined,
}

#[idempotent(key = "order")]
async fn charge(order: String) -> Result<u64, PayError> {
    if order.is_empty() {
        return Err(PayError::Declined);
    }
    Ok(1)
}

fn main() {}
