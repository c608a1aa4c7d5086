use idem_core::{idempotent, Replay};

fn doubled(amount: u64, _replay: &Replay<'_>) -> u64 {
    amount * 2
}

#[idempotent(key = "order", response_hook = "doubled")]
async fn charge(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

#[idempotent(key = "order", response_hook = "|amount, _: &Replay<'_>| amount + 1")]
async fn refund(order: String) -> Result<u64, idem_core::Error> {
    Ok(order.len() as u64)
}

fn main() {
    let _ = (charge(String::new()), refund(String::new()));
}
