//! `crate = "..."` for code that reaches idem_core through another crate's re-export.

mod framework {
    pub mod deps {
        pub use ::idem_core as idem;
    }
}

use framework::deps::idem::idempotent;

#[idempotent(crate = "crate::framework::deps::idem", key = "order")]
async fn charge(order: String) -> Result<u64, framework::deps::idem::Error> {
    Ok(order.len() as u64)
}

fn main() {
    drop(charge("o-1".into()));
}
