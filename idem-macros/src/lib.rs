//! The `#[idempotent]` attribute of idem. Use it through `idem_core::idempotent`, which is where
//! its documentation lives with runnable examples.
//!
//! The attribute keeps the function's signature token for token and generates nothing beside
//! it; only the body changes. The new body collects the call's key parts and fingerprinted
//! arguments into `idem_core::__private::Prepare` and hands the original body, as an
//! `async move` block, to `idem_core::__private::run`, which reserves the key, runs the body at
//! most once, stores the outcome and replays it to retries:
//!
//! ```text
//! #[idempotent(key = "req.order_id", ttl = "1h")]       async fn charge(req: &Req) -> Result<R, E> {
//! async fn charge(req: &Req) -> Result<R, E> {   =>        fn __idem_marker() {}
//!     body                                                   let mut __idem_prep = Prepare::new(installed(), &default_name(__idem_marker, &[]));
//! }                                                          __idem_prep.fingerprint(&req);
//!                                                            __idem_prep.part(&(req.order_id));
//!                                                            __idem_prep.ttl_ms(3600000);
//!                                                            run::<Result<R, E>, _>(__idem_prep, async move { body }).await
//!                                                        }
//! ```
//!
//! Everything that can be checked from the tokens is checked here (argument names, durations,
//! `on_abort`, key operands, what a key-less call leaves out of its fingerprint, the function's
//! form); the rest (a `Result` return type, a storable `Ok` type, an error type with
//! `From<idem_core::Error>`, serialisable fingerprinted arguments) is left to trait bounds on
//! `__private::run` whose `#[diagnostic::on_unimplemented]` messages say what to change.
//!
//! Modules: `args` parses the attribute's arguments, `duration` its durations, `key` the key
//! expression, `target` inspects the function, `expand` writes the new body.

mod args;
mod duration;
mod errors;
mod exclusion;
mod expand;
mod key;
mod target;

use proc_macro::TokenStream;

#[cfg_attr(not(doctest), doc = include_str!("attribute.md"))]
#[proc_macro_attribute]
pub fn idempotent(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::idempotent(args.into(), item.into()).into()
}
