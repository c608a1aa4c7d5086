//! The `#[idempotent]` attribute. Use it through `idem_core::idempotent`.

mod args;
mod duration;
mod errors;
mod expand;
mod key;
mod target;

use proc_macro::TokenStream;

/// Makes an async function idempotent. See `idem_core::idempotent`.
#[proc_macro_attribute]
pub fn idempotent(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::idempotent(args.into(), item.into()).into()
}
