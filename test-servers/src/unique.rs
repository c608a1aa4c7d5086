//! Names no other test uses, for what a test creates on a server other tests may share (a
//! DynamoDB table, a PostgreSQL database).

use std::sync::atomic::{AtomicU64, Ordering};

/// `idem`, `test`, this process's id, a count and eight random characters, joined by
/// `separator` (what the server allows in a name): unique within the process by the count,
/// and across processes by the id and the random characters.
pub fn unique_name(separator: char) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let token = idem_core::store::OwnerToken::generate();
    let s = separator;
    format!(
        "idem{s}test{s}{}{s}{}{s}{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        token.as_str().get(..8).unwrap_or("0")
    )
}
