use idem_core::idempotent;

#[idempotent]
async fn greet(name: impl Into<String> + Send) -> Result<String, idem_core::Error> {
    Ok(name.into())
}

fn main() {}
