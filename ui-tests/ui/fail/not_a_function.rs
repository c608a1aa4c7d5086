use idem_core::idempotent;

#[idempotent(key = "order")]
struct Charge {
    order: String,
}

fn main() {}
