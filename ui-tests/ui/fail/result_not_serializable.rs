use idem_core::idempotent;

struct Receipt {
    id: u64,
}

#[idempotent(key = "order")]
async fn charge(order: String) -> Result<Receipt, idem_core::Error> {
    Ok(Receipt {
        id: order.len() as u64,
    })
}

fn main() {}
