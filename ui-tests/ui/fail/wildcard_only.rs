use idem_core::idempotent;

#[idempotent]
async fn notify(_: &str) -> Result<u64, idem_core::Error> {
    Ok(1)
}

fn main() {}
