use idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(order: String) -> Option<u64> {
    Some(order.len() as u64)
}

fn main() {}
