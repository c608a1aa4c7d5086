//! One conformance check, and the `check!` macro that registers one next to its definition.

use std::future::Future;
use std::pin::Pin;

use super::Context;

/// One conformance check: its name and its function.
#[derive(Clone, Copy)]
pub struct Check {
    /// The check's name, which is also the name of its test.
    pub name: &'static str,
    /// Runs the check; panics when the store breaks the contract.
    pub run: fn(Context) -> BoxFuture,
}

/// The future of a running check.
pub type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The [`Check`] of the `async fn NAME(ctx: Context)` in scope, named after it.
///
/// Each file of checks lists its own in a `CHECKS` constant with this macro. The check functions
/// are private, so one that is written but not listed is dead code, which CI denies.
macro_rules! check {
    ($name:ident) => {
        $crate::Check {
            name: stringify!($name),
            run: |ctx| ::std::boxed::Box::pin($name(ctx)),
        }
    };
}
