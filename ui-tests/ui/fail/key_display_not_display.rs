use idem_core::idempotent;

#[derive(serde::Serialize)]
struct Window {
    from: u64,
}

#[idempotent(key = "display(window)")]
async fn report(window: Window) -> Result<u64, idem_core::Error> {
    Ok(window.from)
}

fn main() {}
