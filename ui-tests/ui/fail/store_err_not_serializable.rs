use idem_core::idempotent;

#[derive(Debug)]
enum PayError {
    Declined,
    Idem(idem_core::Error),
}

impl From<idem_core::Error> for PayError {
    fn from(error: idem_core::Error) -> Self {
        PayError::Idem(error)
    }
}

#[idempotent(key = "order", store_err = "all")]
async fn charge(order: String) -> Result<u64, PayError> {
    if order.is_empty() {
        return Err(PayError::Declined);
    }
    Ok(1)
}

fn main() {}
