//! The `#[idempotent]` attribute. Use it through `idem_core::idempotent`.

use proc_macro::TokenStream;

/// Makes an async function idempotent. See `idem_core::idempotent`.
#[proc_macro_attribute]
pub fn idempotent(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
