//! Keys and functions that come from `macro_rules!`: a literal passed as `$key:literal`,
//! `$key:tt` or `$key:expr`, argument names from either side.
use idem_core::idempotent;

macro_rules! keyed_literal {
    ($name:ident, $key:literal) => {
        #[idempotent(key = $key)]
        async fn $name(order: String) -> Result<usize, idem_core::Error> {
            Ok(order.len())
        }
    };
}

macro_rules! keyed_tt {
    ($name:ident, $key:tt) => {
        #[idempotent(key = $key)]
        async fn $name(order: String) -> Result<usize, idem_core::Error> {
            Ok(order.len())
        }
    };
}

macro_rules! keyed_expr {
    ($name:ident, $key:expr) => {
        #[idempotent(key = $key)]
        async fn $name(order: String) -> Result<usize, idem_core::Error> {
            Ok(order.len())
        }
    };
}

// The argument is named by the caller; the key literal is the macro's.
macro_rules! argument_from_caller {
    ($name:ident, $arg:ident) => {
        #[idempotent(key = "id")]
        async fn $name($arg: u64) -> Result<u64, idem_core::Error> {
            Ok($arg)
        }
    };
}

keyed_literal!(by_literal, "order");
keyed_tt!(by_tt, "order");
keyed_expr!(by_expr, "order");
argument_from_caller!(by_caller_argument, id);

fn main() {
    let _ = by_literal(String::new());
    let _ = by_tt(String::new());
    let _ = by_expr(String::new());
    let _ = by_caller_argument(1);
}
