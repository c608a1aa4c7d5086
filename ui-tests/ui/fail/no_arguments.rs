use idem_core::idempotent;

#[idempotent]
async fn rotate_keys() -> Result<u64, idem_core::Error> {
    Ok(1)
}

fn main() {}
