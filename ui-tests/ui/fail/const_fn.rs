use idem_core::idempotent;

#[idempotent(key = "order")]
const fn charge(order: u64) -> Result<u64, idem_core::Error> {
    Ok(order)
}

fn main() {}
