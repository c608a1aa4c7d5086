//! The checks that nothing which may tell calls apart is left out of the key implicitly: with
//! no `key`, what the default fingerprint leaves out; with a `key`, a method's receiver.

use proc_macro2::Span;
use syn::Ident;
use syn::ItemFn;

use quote::ToTokens;

use crate::args::{Args, Selection};
use crate::target::Target;

/// Something the default fingerprint leaves out without being told to.
struct LeftOut {
    name: String,
    span: Span,
    is_store_root: bool,
}

impl LeftOut {
    fn describe(&self) -> String {
        if self.is_store_root {
            format!("`{}` (the root of `store`)", self.name)
        } else {
            format!("`{}`", self.name)
        }
    }
}

/// With no `key` the key is the fingerprint, so whatever the fingerprint leaves out on its own
/// (a receiver, the root of `store`) cannot tell two calls apart: one would get the other's
/// result. That is an error unless `scope`, `fingerprint` or `skip` says the author chose.
pub(crate) fn implicit_exclusion(
    args: &Args,
    target: &Target,
    func: &ItemFn,
    fingerprinted: &[Ident],
) -> Option<syn::Error> {
    if args.key.is_some() || args.scope.is_some() || args.selection.is_some() {
        return None;
    }
    let left_out = left_out_implicitly(args, target, func);
    let first = left_out.first()?;
    let described: Vec<String> = left_out.iter().map(LeftOut::describe).collect();
    let names: Vec<String> = left_out.iter().map(|l| format!("`{}`", l.name)).collect();
    let verb = if left_out.len() == 1 { "is" } else { "are" };
    Some(syn::Error::new(
        first.span,
        format!(
            "with no `key`, the key is the fingerprint of the arguments, and {} {verb} left out \
             of it, so a call that differs from an earlier one only in {} gets the earlier \
             one's result: add `key = \"...\"` or `scope = \"...\"`{}",
            described.join(" and "),
            names.join(" and "),
            explicit_selection(&left_out, fingerprinted),
        ),
    ))
}

/// With a `key`, a method's receiver is in neither the key nor the fingerprint unless told, so
/// two receivers (two tenants) calling with the same key would share one record. That is an
/// error unless the key or `scope` uses `self`, `fingerprint` lists `self`, `skip` names `self`
/// (with or without `fingerprint`), or the receiver is the handle itself (`store = "self"`).
pub(crate) fn unaccounted_receiver(args: &Args, func: &ItemFn) -> Option<syn::Error> {
    let (_, operands) = args.key.as_ref()?;
    let receiver = func.sig.receiver()?;
    let keyed_by_self = operands
        .iter()
        .filter_map(crate::key::Operand::root)
        .any(|root| root == "self");
    let scoped_by_self = args
        .scope
        .as_ref()
        .is_some_and(|scope| mentions_self(scope.to_token_stream()));
    let fingerprinted = matches!(&args.selection,
        Some(Selection::Only(names)) if names.iter().any(|name| name == "self"));
    let is_handle = args
        .store
        .as_ref()
        .and_then(handle_argument)
        .is_some_and(|handle| handle == "self");
    let skipped = args.receiver_skipped.is_some();
    if keyed_by_self || scoped_by_self || fingerprinted || skipped || is_handle {
        return None;
    }
    let fn_name = &func.sig.ident;
    Some(syn::Error::new(
        receiver.self_token.span,
        format!(
            "`self` is in neither the key, the scope nor the fingerprint of `{fn_name}`, so a \
             call on another receiver with the same key gets this one's result: put what tells \
             receivers apart in `scope` (e.g. `scope = \"self.tenant\"`) or in `key`, or, if \
             every receiver is the same service, say so with `skip = \"self\"`"
        ),
    ))
}

/// Whether `tokens` mention `self`.
fn mentions_self(tokens: proc_macro2::TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "self",
        proc_macro2::TokenTree::Group(group) => mentions_self(group.stream()),
        _ => false,
    })
}

/// The receiver and the root of `store`, except an argument that is the handle itself
/// (`store = "idem"`): plumbing with nothing else in it, it never needs to tell calls apart.
fn left_out_implicitly(args: &Args, target: &Target, func: &ItemFn) -> Vec<LeftOut> {
    let store = args.store.as_ref();
    let handle = store.and_then(handle_argument);
    let root = store
        .and_then(crate::check::store_root)
        .filter(|root| Some(root) != handle.as_ref());
    let receiver = func
        .sig
        .receiver()
        .filter(|_| args.receiver_skipped.is_none())
        .filter(|_| handle.as_ref().is_none_or(|handle| handle != "self"))
        .map(|receiver| LeftOut {
            name: "self".into(),
            span: receiver.self_token.span,
            is_store_root: false,
        });
    let store_arg = root.and_then(|root| {
        let input = target
            .inputs
            .iter()
            .find(|input| input.name.as_ref() == Some(&root))?;
        Some(LeftOut {
            name: root.to_string(),
            span: input.span,
            is_store_root: true,
        })
    });
    receiver.into_iter().chain(store_arg).collect()
}

/// The advice to name the fingerprinted arguments explicitly, when there are any to name.
fn explicit_selection(left_out: &[LeftOut], fingerprinted: &[Ident]) -> String {
    if fingerprinted.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = fingerprinted.iter().map(ToString::to_string).collect();
    let skip = left_out
        .iter()
        .find(|l| l.is_store_root)
        .map(|l| format!(" or `skip = \"{}\"`", l.name))
        .unwrap_or_default();
    format!(
        ", or choose the fingerprinted arguments yourself with `fingerprint = \"{}\"`{skip}",
        listed.join(", ")
    )
}

/// The argument that `store = "..."` names whole (`idem`, `&idem`, `self`), as opposed to a
/// path into one (`ctx.idem`).
fn handle_argument(expr: &syn::Expr) -> Option<Ident> {
    match expr {
        syn::Expr::Path(path) => path.path.get_ident().cloned(),
        syn::Expr::Reference(reference) => handle_argument(&reference.expr),
        _ => None,
    }
}
