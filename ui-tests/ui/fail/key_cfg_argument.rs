use idem_core::idempotent;

// The key would have another part in builds without the feature.
#[idempotent(key = "order + actor")]
async fn charge(order: String, #[cfg(any())] actor: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {}
