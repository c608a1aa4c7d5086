//! Checking the arguments against the function: every name they mention is an argument, every
//! fingerprinted argument can be fingerprinted, and something tells calls apart.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn};

use crate::args::{Args, Selection};
use crate::errors::Errors;
use crate::key::Operand;
use crate::name::Owner;
use crate::target::Target;

/// Checks `args` against the function, reporting every problem into `errors`, and returns the
/// fingerprinted arguments.
pub(crate) fn check(
    args: &Args,
    target: &Target,
    func: &ItemFn,
    errors: &mut Errors,
) -> Vec<Ident> {
    let fn_name = &func.sig.ident;
    if let Some((_, operands)) = &args.key {
        for root in operands.iter().filter_map(Operand::root) {
            let known = if root == "self" {
                target.has_receiver
            } else {
                target.has_arg(root)
            };
            if !known {
                errors.push(syn::Error::new(
                    root.span(),
                    format!(
                        "`key` uses `{root}`, which is not an argument of `{fn_name}`; {}",
                        target.arg_list()
                    ),
                ));
            }
        }
    }
    let conditional = |root: &Ident| {
        target
            .input(root)
            .is_some_and(|input| !input.cfg.is_empty())
    };
    let key_roots = args.key.iter().flat_map(|(lit, operands)| {
        operands
            .iter()
            .filter_map(Operand::root)
            .map(move |root| ("key", root.clone(), lit.span()))
    });
    let named_by = |arg, expr: &syn::Expr| {
        let span = expr.span();
        target
            .arguments_in(quote::ToTokens::to_token_stream(expr))
            .into_iter()
            .map(move |root| (arg, root, span))
    };
    let expressions = args
        .scope
        .iter()
        .flat_map(|scope| named_by("scope", scope))
        .chain(args.store.iter().flat_map(|store| named_by("store", store)));
    for (arg, root, span) in key_roots.chain(expressions) {
        if conditional(&root) {
            errors.push(syn::Error::new(
                span,
                format!(
                    "`{arg}` uses `{root}`, which exists only under `#[cfg(..)]`, so builds \
                     without it would not compile or would tell calls apart differently: use an \
                     argument without `cfg`"
                ),
            ));
        }
    }
    if let Some(selection) = &args.selection {
        let (arg, names) = selection.names();
        let unknown = |name: &&Ident| {
            if *name == "self" {
                !target.has_receiver
            } else {
                !target.has_arg(name)
            }
        };
        for name in names.iter().filter(unknown) {
            errors.push(syn::Error::new(
                name.span(),
                format!(
                    "`{arg}` names `{name}`, which is not an argument of `{fn_name}`; {}",
                    target.arg_list()
                ),
            ));
        }
    }
    if let Some(skipped) = args
        .receiver_skipped
        .as_ref()
        .filter(|_| !target.has_receiver)
    {
        errors.push(syn::Error::new(
            skipped.span(),
            format!(
                "`skip` names `self`, which is not an argument of `{fn_name}`; {}",
                target.arg_list()
            ),
        ));
    }
    let fingerprinted = fingerprinted(args, target, errors);
    // After an argument error `key` (or `scope`, `skip`...) may just be misspelt: say nothing
    // about a missing one.
    if !errors.is_empty() {
        return fingerprinted;
    }
    if let Some(error) = crate::exclusion::implicit_exclusion(args, target, func, &fingerprinted) {
        errors.push(error);
    } else if let Some(error) = crate::exclusion::unaccounted_receiver(args, func) {
        errors.push(error);
    } else if args.key.is_none()
        && fingerprinted.is_empty()
        && target
            .inputs
            .iter()
            .all(|input| input.name.is_some() || input.wildcard)
    {
        errors.push(nothing_tells_calls_apart(target, func));
    }
    fingerprinted
}

/// The error for a function with no `key` and nothing fingerprinted, saying what to do for
/// the function as it is.
fn nothing_tells_calls_apart(target: &Target, func: &ItemFn) -> syn::Error {
    let fn_name = &func.sig.ident;
    if target.inputs.is_empty() && !target.has_receiver {
        return syn::Error::new(
            func.sig.paren_token.span.join(),
            format!(
                "`{fn_name}` has no arguments, so with no `key` every call is the same call: say \
                 so with a literal key, e.g. `key = \"\\\"{fn_name}\\\"\"`; its first result \
                 is then replayed until `ttl` passes"
            ),
        );
    }
    if let Some(wildcard) = target.inputs.iter().find(|input| input.wildcard) {
        return syn::Error::new(
            wildcard.span,
            format!(
                "nothing tells calls of `{fn_name}` apart: with no `key`, the key is the \
                 fingerprint of the arguments, and a `_` argument is never fingerprinted (the \
                 body cannot see it); give `key = \"...\"`, or name the argument (`_note: &str`) \
                 to fingerprint it"
            ),
        );
    }
    syn::Error::new(
        Span::call_site(),
        format!(
            "nothing tells calls of `{fn_name}` apart: with no `key`, the key is the fingerprint \
             of the arguments, and none is fingerprinted; give `key = \"...\"` or fingerprint \
             at least one argument"
        ),
    )
}

/// Checks that the function can have a default name if it needs one: a method is named after
/// its impl, which only `#[idempotent]` on the impl block can see.
pub(crate) fn named(
    args: &Args,
    target: &Target,
    func: &ItemFn,
    owner: Option<&Owner>,
    errors: &mut Errors,
) {
    if args.name.is_some() || owner.is_some() || !target.in_impl {
        return;
    }
    let fn_name = &func.sig.ident;
    errors.push(syn::Error::new(
        fn_name.span(),
        format!(
            "the default name of `{fn_name}` includes the type it is a method of, which \
             `#[idempotent]` on a method cannot see: put `#[idempotent]` on its `impl` block as \
             well, or give it a stable `name = \"...\"`"
        ),
    ));
}

/// The arguments that `fingerprint`, `skip` and `store` leave in the fingerprint (the
/// receiver only when `fingerprint` lists `self`); `_` never is, the body cannot see it; a
/// destructuring pattern among them is an error, as it has no name to fingerprint.
fn fingerprinted(args: &Args, target: &Target, errors: &mut Errors) -> Vec<Ident> {
    let store_root = args.store.as_ref().and_then(store_root);
    let mut fingerprinted = Vec::new();
    if let Some(Selection::Only(names)) = &args.selection {
        fingerprinted.extend(names.iter().filter(|name| *name == "self").cloned());
    }
    for input in target.inputs.iter().filter(|input| !input.wildcard) {
        let selected = match (&args.selection, &input.name) {
            (Some(Selection::Only(names)), Some(name)) => names.contains(name),
            (Some(Selection::Only(_)), None) => false,
            (Some(Selection::Skip(names)), Some(name)) => {
                !names.contains(name) && store_root.as_ref() != Some(name)
            }
            (None, Some(name)) => store_root.as_ref() != Some(name),
            (_, None) => true,
        };
        if !selected {
            continue;
        }
        match &input.name {
            Some(name) => fingerprinted.push(name.clone()),
            None => errors.push(syn::Error::new(
                input.span,
                "`#[idempotent]` cannot fingerprint a destructuring pattern: bind the argument to \
                 a name and destructure it in the body, or list the fingerprinted arguments with \
                 `fingerprint = \"...\"`",
            )),
        }
    }
    fingerprinted
}

/// The argument `store = "..."` reads the handle from (`store = "idem"`, `store = "ctx.idem"`):
/// plumbing, not payload, so it is left out of the default fingerprint.
pub(crate) fn store_root(expr: &syn::Expr) -> Option<Ident> {
    match expr {
        syn::Expr::Path(path) => path.path.get_ident().cloned(),
        syn::Expr::Field(field) => store_root(&field.base),
        syn::Expr::Reference(reference) => store_root(&reference.expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::{expand_method_text, expand_text};

    #[test]
    fn the_store_argument_is_not_fingerprinted_by_default() {
        let out = expand_text(
            r#"store = "idem", key = "id""#,
            "async fn f(idem: &Idempotency, id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(out.contains("fingerprint (& id)"), "{out}");
        assert!(!out.contains("fingerprint (& idem)"), "{out}");
    }

    #[test]
    fn a_misspelt_key_is_reported_once() {
        let out = expand_text(r#"keys = "id""#, "async fn f() -> Result<u64, E> { Ok(1) }");
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("unknown argument `keys`"), "{out}");
    }

    #[test]
    fn with_no_key_a_store_root_left_out_implicitly_is_an_error() {
        let item = "async fn transfer(ctx: &Ctx, to: String, amount: u64) -> Result<u64, E> { Ok(amount) }";
        let out = expand_text(r#"store = "ctx.idem""#, item);
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        for piece in [
            "`ctx` (the root of `store`) is left out of it",
            "only in `ctx` gets",
            r#"`fingerprint = \"to, amount\"` or `skip = \"ctx\"`"#,
        ] {
            assert!(out.contains(piece), "missing `{piece}` in {out}");
        }
        for chosen in [
            r#"key = "to""#,
            r#"scope = "ctx.user""#,
            r#"skip = "ctx""#,
            r#"skip = "amount""#,
            r#"fingerprint = "to, amount""#,
        ] {
            let out = expand_text(&format!(r#"store = "ctx.idem", {chosen}"#), item);
            assert!(!out.contains("compile_error"), "{chosen}: {out}");
        }
    }

    #[test]
    fn with_no_key_a_receiver_left_out_implicitly_is_an_error() {
        let item = "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }";
        let out = expand_method_text("", item);
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("and `self` is left out of it"), "{out}");
        assert!(out.contains(r#"`fingerprint = \"order\"`"#), "{out}");
        assert!(!out.contains("skip ="), "{out}");

        let out = expand_method_text(r#"store = "self.idem""#, item);
        assert!(out.contains("and `self` is left out of it"), "{out}");
        let out = expand_method_text(
            r#"store = "ctx.idem""#,
            "async fn f(&self, ctx: &Ctx, id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(
            out.contains("`self` and `ctx` (the root of `store`) are left out"),
            "{out}"
        );
    }

    #[test]
    fn a_misspelt_key_is_not_taken_for_an_implicit_exclusion() {
        let out = expand_method_text(
            r#"store = "self.idem", keys = "order""#,
            "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
        );
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("unknown argument `keys`"), "{out}");
    }

    #[test]
    fn a_handle_passed_whole_is_not_an_implicit_exclusion() {
        let out = expand_text(
            r#"store = "idem""#,
            "async fn f(idem: &Idempotency, id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("fingerprint (& id)"), "{out}");
        assert!(!out.contains("fingerprint (& idem)"), "{out}");
    }

    #[test]
    fn a_method_needs_its_impl_or_a_name() {
        let needs = "put `#[idempotent]` on its `impl` block as well";
        for method in [
            "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
            "async fn open(id: u64) -> Result<Self, E> { Ok(Self { id }) }",
            "async fn open(id: u64) -> Result<u64, E> { Self::check(id) }",
        ] {
            let out = expand_text(r#"key = "id""#, method);
            assert!(out.contains(needs), "{out}");
            assert!(out.contains("the default name of"), "{out}");
            let out = expand_text(r#"key = "id", name = "tickets.open""#, method);
            assert!(!out.contains(needs), "{out}");
            assert!(!expand_method_text(r#"key = "id""#, method).contains(needs));
        }
        let out = expand_text(
            r#"key = "id""#,
            "async fn open(id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(!out.contains("compile_error"), "{out}");
    }
}
