//! `#[idempotent]` on an `impl` block: it expands the `#[idempotent(...)]` methods inside, which
//! can then be named after the impl (see `name`), something a method's own attribute cannot see.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, ImplItem, ImplItemFn, ItemFn, ItemImpl, Meta};

use crate::errors::Errors;
use crate::name::Owner;

/// Expands `#[idempotent] impl ... { #[idempotent(args)] async fn ... }`.
pub(crate) fn impl_block(args: TokenStream, mut block: ItemImpl) -> TokenStream {
    let mut errors = Errors::default();
    if !args.is_empty() {
        errors.push(syn::Error::new_spanned(
            &args,
            "`#[idempotent]` on an `impl` block takes no arguments: give them to the \
             `#[idempotent(...)]` of its methods",
        ));
    }
    let owner = Owner::of(&block);
    let mut methods = 0;
    let items = std::mem::take(&mut block.items);
    block.items = items
        .into_iter()
        .map(|item| match item {
            ImplItem::Fn(mut method) => match method.attrs.iter().position(is_idempotent) {
                Some(index) => {
                    methods += 1;
                    let attr = method.attrs.remove(index);
                    expand(&attr, method, &owner, &mut errors)
                }
                None => ImplItem::Fn(method),
            },
            other => other,
        })
        .collect();
    if methods == 0 && errors.is_empty() {
        errors.push(syn::Error::new(
            block.impl_token.span,
            "no method of this `impl` block has `#[idempotent(...)]`: `#[idempotent]` on an \
             `impl` block names the idempotent methods inside after it; remove it, or mark the \
             methods",
        ));
    }
    let errors = errors.into_compile_errors();
    quote!(#block #errors)
}

/// `method` expanded by `attr`, its `#[idempotent(...)]`, as a method of `owner`.
fn expand(attr: &Attribute, method: ImplItemFn, owner: &Owner, errors: &mut Errors) -> ImplItem {
    let Some(args) = arguments(attr, errors) else {
        return ImplItem::Fn(method);
    };
    if let Some(default) = &method.defaultness {
        errors.push(syn::Error::new(
            default.span,
            "`#[idempotent]` cannot go on a `default fn`",
        ));
        return ImplItem::Fn(method);
    }
    let func = ItemFn {
        attrs: method.attrs,
        vis: method.vis,
        sig: method.sig,
        block: Box::new(method.block),
    };
    ImplItem::Verbatim(crate::function(args, func, Some(owner)))
}

/// Whether `attr` is `#[idempotent(...)]`, however its path is written.
fn is_idempotent(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "idempotent")
}

/// The arguments of a method's `#[idempotent(...)]`.
fn arguments(attr: &Attribute, errors: &mut Errors) -> Option<TokenStream> {
    match &attr.meta {
        Meta::Path(_) => Some(TokenStream::new()),
        Meta::List(list) => Some(list.tokens.clone()),
        Meta::NameValue(_) => {
            errors.push(syn::Error::new(
                attr.span(),
                format!(
                    "write the arguments in parentheses: `#[{}(...)]`",
                    attr.path().to_token_stream().to_string().replace(' ', "")
                ),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::expand_text;

    #[test]
    fn every_idempotent_method_is_expanded_and_the_rest_is_kept() {
        let out = expand_text(
            "",
            r#"impl Charger for Stripe {
                const FEE: u64 = 1;
                #[idempotent(key = "order", skip = "self")]
                async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }
                #[idem_core::idempotent(key = "order", skip = "self")]
                async fn refund(&self, order: u64) -> Result<u64, E> { Ok(order) }
                async fn status(&self, order: u64) -> Result<u64, E> { Ok(order) }
            }"#,
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(!out.contains("# [idempotent"), "{out}");
        assert!(out.contains("const FEE : u64 = 1 ;"), "{out}");
        assert!(out.contains(r#""::<Stripe as Charger>::charge""#), "{out}");
        assert!(out.contains(r#""::<Stripe as Charger>::refund""#), "{out}");
        assert_eq!(out.matches("__idem_prep =").count(), 2, "{out}");
    }

    #[test]
    fn an_impl_block_takes_no_arguments_and_needs_an_idempotent_method() {
        let method = r#"#[idempotent(key = "order", skip = "self")] async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }"#;
        let out = expand_text(r#"key = "order""#, &format!("impl Stripe {{ {method} }}"));
        assert!(
            out.contains("on an `impl` block takes no arguments"),
            "{out}"
        );
        assert!(
            out.contains("__idem_prep"),
            "the methods are expanded all the same: {out}"
        );

        let out = expand_text("", "impl Stripe { async fn charge(&self) {} }");
        assert!(out.contains("no method of this `impl` block"), "{out}");
    }

    #[test]
    fn a_methods_errors_leave_it_unchanged_next_to_them() {
        let out = expand_text(
            "",
            r#"impl Stripe {
                #[idempotent(keys = "order")]
                async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }
            }"#,
        );
        assert!(out.contains("unknown argument `keys`"), "{out}");
        assert!(
            out.contains(
                "async fn charge (& self , order : u64) -> Result < u64 , E > { Ok (order) }"
            ),
            "{out}"
        );
    }
}
