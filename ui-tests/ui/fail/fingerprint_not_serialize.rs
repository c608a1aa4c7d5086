use idem_core::idempotent;

struct Database;

#[idempotent(key = "order")]
async fn charge(db: &Database, order: String) -> Result<u64, idem_core::Error> {
    let _ = db;
    Ok(order.len() as u64)
}

fn main() {}
