//! `crate = "..."` for code that reaches idem_core under another name: through another crate's
//! re-export, or renamed.

extern crate idem_core as idem_renamed;

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

#[idem_renamed::idempotent(crate = "idem_renamed", key = "order")]
async fn refund(order: String) -> Result<u64, idem_renamed::Error> {
    Ok(order.len() as u64)
}

fn main() {
    drop(charge("o-1".into()));
    drop(refund("o-1".into()));
}
