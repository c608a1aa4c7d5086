use idem_core::idempotent;

#[idempotent(key = "order")]
fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
