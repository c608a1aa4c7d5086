use idem_core::idempotent;

#[idempotent(key = "order")]
async fn charge(order: String) {
    println!("{order}");
}

fn main() {}
