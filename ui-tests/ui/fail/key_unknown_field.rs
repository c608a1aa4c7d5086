use idem_core::idempotent;

#[derive(serde::Serialize)]
struct Request {
    order_id: String,
}

#[idempotent(key = "req.orderid")]
async fn charge(req: &Request) -> Result<u64, idem_core::Error> {
    Ok(req.order_id.len() as u64)
}

fn main() {}
