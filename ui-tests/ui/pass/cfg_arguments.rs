//! An argument that exists only in some builds is fingerprinted only in those.
use idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(
    order: String,
    #[cfg(any())] actor: String,
    #[cfg(all())] note: String,
) -> Result<usize, idem_core::Error> {
    Ok(order.len() + note.len())
}

#[idempotent]
async fn audit(order: String, #[cfg(any())] actor: String) -> Result<usize, idem_core::Error> {
    Ok(order.len())
}

fn main() {
    let _ = charge(String::new(), String::new());
    let _ = audit(String::new());
}
