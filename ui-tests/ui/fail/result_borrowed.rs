use idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(order: &str) -> Result<&str, idem_core::Error> {
    Ok(order)
}

fn main() {}
