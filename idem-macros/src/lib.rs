//! The `#[idempotent]` attribute of idem. Use it through `idem_core::idempotent`, which is where
//! its documentation lives with runnable examples.
//!
//! The attribute keeps the function's signature token for token and generates nothing beside
//! it; only the body changes. The new body collects the call's key parts and fingerprinted
//! arguments into `idem_core::__private01::Prepare` and hands the original body, as an
//! `async move` block, to `idem_core::__private01::run`, which reserves the key, runs the body at
//! most once, stores the outcome and replays it to retries:
//!
//! ```text
//! #[idempotent(key = "req.order_id", ttl = "1h")]       async fn charge(req: &Req) -> Result<R, E> {
//! async fn charge(req: &Req) -> Result<R, E> {   =>        let mut __idem_prep = Prepare::new(installed(), concat!(module_path!(), "::charge"));
//!     body                                                   __idem_prep.fingerprint(&req);
//! }                                                          __idem_prep.part(&(req.order_id));
//!                                                            __idem_prep.ttl_ms(3600000);
//!                                                            run::<Result<R, E>, _>(__idem_prep, async move { body }).await
//!                                                        }
//! ```
//!
//! On an `impl` block the attribute expands the `#[idempotent(...)]` functions inside, which
//! are then named after the block (`name`); a method's own attribute cannot see its block.
//!
//! Everything that can be checked from the tokens is checked here (argument names, durations,
//! `on_abort`, key operands, what a key-less call leaves out of its fingerprint, the function's
//! form); the rest (a `Result` return type, a storable `Ok` type, an error type with
//! `From<idem_core::Error>`, serialisable fingerprinted arguments) is left to trait bounds on
//! `__private01::run` whose `#[diagnostic::on_unimplemented]` messages say what to change.
//!
//! Modules, in the order they run: `methods` handles an `impl` block, `args` parses the
//! attribute's arguments (`arg` their names, `duration` durations, `key` the key expression),
//! `target` inspects the function, `check` checks the arguments against it (`exclusion` what a
//! key-less call leaves out), `expand` writes the new body (`name` the default name).

mod arg;
mod args;
mod check;
mod duration;
mod errors;
mod exclusion;
mod expand;
mod key;
mod methods;
mod name;
mod target;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::{Item, ItemFn};

use crate::args::Args;
use crate::errors::Errors;
use crate::name::Owner;
use crate::target::Target;

#[cfg_attr(not(doctest), doc = include_str!("attribute.md"))]
#[proc_macro_attribute]
pub fn idempotent(
    args: proc_macro::TokenStream,
    item: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    attribute(args.into(), item.into()).into()
}

/// Expands `#[idempotent(args)] item`, on a function or on an impl block.
fn attribute(args: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(func)) => function(args, func, None),
        Ok(Item::Impl(block)) => methods::impl_block(args, block),
        Ok(_) => with_errors(
            item,
            syn::Error::new(
                proc_macro2::Span::call_site(),
                "`#[idempotent]` goes on an `async fn` (a free function or a method with a body), \
                 or on the `impl` block of such methods",
            ),
        ),
        // The item is not valid Rust as syn reads it: its own error says where and why.
        Err(error) => with_errors(item, error),
    }
}

/// Expands `#[idempotent(args)]` on `func`, a method of `owner` if given: parse, check, expand.
/// On error the function is emitted unchanged next to every error, so that callers and IDEs
/// keep working.
fn function(args: TokenStream, mut func: ItemFn, owner: Option<&Owner>) -> TokenStream {
    let mut errors = Errors::default();
    let args = Args::parse(args, &mut errors);
    let Some(target) = Target::inspect(&func, &mut errors) else {
        return with_errors(func.into_token_stream(), errors);
    };
    let fingerprinted = check::check(&args, &target, &func, &mut errors);
    check::named(&args, &target, &func, owner, &mut errors);
    if !errors.is_empty() {
        return with_errors(func.into_token_stream(), errors);
    }
    expand::expand(&args, &target, &fingerprinted, owner, &mut func);
    func.into_token_stream()
}

fn with_errors(item: TokenStream, errors: impl Into<Errors>) -> TokenStream {
    let errors = errors.into().into_compile_errors();
    quote!(#item #errors)
}

/// The expansion of `#[idempotent(args)] item` as text, for tests.
#[cfg(test)]
fn expand_text(args: &str, item: &str) -> String {
    attribute(args.parse().unwrap(), item.parse().unwrap()).to_string()
}

/// The expansion of `method`, under `#[idempotent(args)]`, in an `impl Service` block under
/// `#[idempotent]`, as text, for tests.
#[cfg(test)]
fn expand_method_text(args: &str, method: &str) -> String {
    let block = format!("impl Service {{ #[idempotent({args})] {method} }}");
    expand_text("", &block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_error_the_function_is_emitted_unchanged_with_every_error() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand_text(r#"ttl = "soon", colour = "red", key = "nope""#, item);
        assert!(
            out.starts_with(&item.parse::<TokenStream>().unwrap().to_string()),
            "{out}"
        );
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
        assert!(!out.contains("__idem_prep"), "{out}");
    }

    #[test]
    fn an_item_syn_cannot_parse_gets_syns_own_error() {
        let out = expand_text(
            r#"key = "id""#,
            "async fn f(id: u64) -> Result<u64, E> { let = id; Ok(id) }",
        );
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(!out.contains("goes on an `async fn`"), "{out}");
        assert!(out.contains("expected"), "{out}");
    }

    #[test]
    fn an_item_that_is_not_a_function_is_told_where_the_attribute_goes() {
        let out = expand_text(r#"key = "id""#, "struct Charge { id: u64 }");
        assert!(out.contains("goes on an `async fn`"), "{out}");
    }
}
