//! Code generation: the function as written, with a body that runs the original one through
//! `idem_core::__private::run`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{parse_quote, Ident, ItemFn, Path};

use crate::args::{Args, Selection, StoreErr};
use crate::errors::Errors;
use crate::key::Operand;
use crate::target::{async_trait_body, Form, Target};

/// Expands `#[idempotent(args)] item`. On error the item is emitted unchanged next to the
/// errors, so that callers and IDEs keep working.
pub(crate) fn idempotent(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let args = Args::parse(args, &mut errors);
    let Ok(mut func) = syn::parse2::<ItemFn>(item.clone()) else {
        errors.push(syn::Error::new(
            Span::call_site(),
            "`#[idempotent]` goes on an `async fn` (a free function or a method with a body)",
        ));
        return with_errors(item, errors);
    };
    let Some(target) = Target::inspect(&func, &mut errors) else {
        return with_errors(item, errors);
    };
    let fingerprinted = check(&args, &target, &func, &mut errors);
    if !errors.is_empty() {
        return with_errors(item, errors);
    }
    rewrite(&args, &target, &fingerprinted, &mut func);
    func.into_token_stream()
}

fn with_errors(item: TokenStream, errors: Errors) -> TokenStream {
    let errors = errors.into_compile_errors();
    quote!(#item #errors)
}

/// Checks the arguments against the function and returns the fingerprinted arguments.
fn check(args: &Args, target: &Target, func: &ItemFn, errors: &mut Errors) -> Vec<Ident> {
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
    if let Some(selection) = &args.selection {
        let (arg, names) = selection.names();
        for name in names.iter().filter(|name| !target.has_arg(name)) {
            errors.push(syn::Error::new(
                name.span(),
                format!(
                    "`{arg}` names `{name}`, which is not an argument of `{fn_name}`; {}",
                    target.arg_list()
                ),
            ));
        }
    }
    let store_root = args.store.as_ref().and_then(store_root);
    let mut fingerprinted = Vec::new();
    for arg in &target.args {
        let selected = match (&args.selection, &arg.name) {
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
        match &arg.name {
            Some(name) => fingerprinted.push(name.clone()),
            None => errors.push(syn::Error::new(
                arg.span,
                "`#[idempotent]` cannot fingerprint a destructuring pattern: bind the argument to \
                 a name and destructure it in the body, or list the fingerprinted arguments with \
                 `fingerprint = \"...\"`",
            )),
        }
    }
    // After an argument error `key` (or `scope`, `skip`...) may just be misspelt: say nothing
    // about a missing one.
    if !errors.is_empty() {
        return fingerprinted;
    }
    if let Some(error) = crate::exclusion::implicit_exclusion(args, target, func, &fingerprinted) {
        errors.push(error);
    } else if args.key.is_none()
        && fingerprinted.is_empty()
        && target.args.iter().all(|a| a.name.is_some())
    {
        errors.push(syn::Error::new(
            Span::call_site(),
            format!(
                "nothing tells calls of `{fn_name}` apart: with no `key`, the key is the \
                 fingerprint of the arguments, and none is fingerprinted; give \
                 `key = \"...\"` or fingerprint at least one argument"
            ),
        ));
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

/// Replaces the body of `func`.
fn rewrite(args: &Args, target: &Target, fingerprinted: &[Ident], func: &mut ItemFn) {
    let krate: Path = args
        .krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::idem_core));
    let private = quote!(#krate::__private);
    let setup = setup(args, target, fingerprinted, func, &private);
    let run = run(args, target, func, &private);
    let wrapped = quote! {
        #(#setup)*
        #run
    };
    match &target.form {
        Form::Async { .. } => func.block = parse_quote!({ #wrapped }),
        Form::AsyncTrait { .. } => {
            if let Some(block) = async_trait_body(func) {
                *block = parse_quote!(async move { #wrapped });
            }
        }
    }
    if args.name.is_none() {
        let marker = marker();
        // An item in the function's own block: its path names the function (see `default_name`).
        func.block.stmts.insert(0, parse_quote!(fn #marker() {}));
    }
}

fn prep() -> Ident {
    Ident::new("__idem_prep", Span::call_site())
}

fn marker() -> Ident {
    Ident::new("__idem_marker", Span::call_site())
}

/// The statements that put the call together in `__idem_prep`: handle, name, scope,
/// fingerprinted arguments, key parts and durations.
fn setup(
    args: &Args,
    target: &Target,
    fingerprinted: &[Ident],
    func: &ItemFn,
    private: &TokenStream,
) -> Vec<TokenStream> {
    let prep = prep();
    let handle = match &args.store {
        Some(store) => {
            let private = respan(private.clone(), store.span());
            quote_spanned!(store.span()=> #private::handle(&(#store)))
        }
        None => quote!(#private::installed()),
    };
    let name = match &args.name {
        Some(name) => name.to_token_stream(),
        None => {
            let marker = marker();
            let receiver = target.has_receiver.then(|| quote!(Self));
            let params = func.sig.generics.type_params().map(|param| &param.ident);
            let instance = receiver
                .into_iter()
                .chain(params.map(ToTokens::to_token_stream));
            quote!(&#private::default_name(#marker, &[#(::core::any::type_name::<#instance>()),*]))
        }
    };

    let mut setup = vec![quote!(let mut #prep = #private::Prepare::new(#handle, #name);)];
    if let Some(scope) = &args.scope {
        setup.push(quote_spanned!(scope.span()=> #prep.scope(&(#scope));));
    }
    for arg in fingerprinted {
        setup.push(quote_spanned!(arg.span()=> #prep.fingerprint(&#arg);));
    }
    match &args.key {
        Some((_, operands)) => setup.extend(operands.iter().map(|operand| match operand {
            Operand::Literal(lit) => quote_spanned!(lit.span()=> #prep.part(#lit);),
            Operand::Path { expr, .. } => quote_spanned!(expr.span()=> #prep.part(&(#expr));),
        })),
        None => setup.push(quote!(#prep.key_by_fingerprint();)),
    }
    for (setter, millis) in [
        ("ttl_ms", &args.ttl),
        ("lease_ms", &args.lease),
        ("wait_ms", &args.wait),
    ] {
        if let Some(millis) = millis {
            let setter = Ident::new(setter, Span::call_site());
            let ms = millis.ms;
            setup.push(quote!(#prep.#setter(#ms);));
        }
    }
    if let Some(on_abort) = args.on_abort {
        let variant = Ident::new(on_abort.variant(), Span::call_site());
        setup.push(quote!(#prep.on_abort(#private::OnAbort::#variant);));
    }
    setup
}

/// `__private::run(__idem_prep, <original body as a future>).await`.
fn run(args: &Args, target: &Target, func: &mut ItemFn, private: &TokenStream) -> TokenStream {
    let prep = prep();
    let ret = target.form.ret();
    let body = match &target.form {
        Form::Async { .. } => {
            let stmts = &func.block.stmts;
            // The early return fixes the block's output type before the body is checked, so
            // `?` and type errors in the body are reported as in the original function.
            quote! {
                async move {
                    if let ::core::option::Option::Some(__idem_ret) =
                        ::core::option::Option::None::<#ret>
                    {
                        #[allow(unreachable_code)]
                        return __idem_ret;
                    }
                    #(#stmts)*
                }
            }
        }
        Form::AsyncTrait { .. } => match async_trait_body(func) {
            Some(block) => block.to_token_stream(),
            None => unreachable!("checked by Target::inspect"),
        },
    };
    // The whole call, return type included, carries the span of the return type's first token:
    // rustc checks the bounds of `run` at the turbofish, the call and the `.await`, and reports
    // a failed bound once only when the three spans agree.
    let span = ret.span();
    let private = respan(private.clone(), span);
    let ret = respan(ret.to_token_stream(), span);
    match &args.store_err {
        None => quote_spanned!(span=> #private::run::<#ret, _>(#prep, #body).await),
        Some(StoreErr::All) => quote_spanned! {span=>
            #private::run_storing::<#ret, _, _>(#prep, #private::all_errors, #body).await
        },
        Some(StoreErr::When(predicate)) => quote_spanned! {span=>
            #private::run_storing::<#ret, _, _>(#prep, #predicate, #body).await
        },
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(args: &str, item: &str) -> String {
        idempotent(args.parse().unwrap(), item.parse().unwrap()).to_string()
    }

    #[test]
    fn the_signature_is_kept_and_the_body_runs_through_private_run() {
        let out = expand(
            r#"key = "req.order_id + op", ttl = "1h""#,
            "pub(crate) async fn charge<'a>(req: &'a Req, op: &str) -> Result<R, E> { body() }",
        );
        assert!(
            out.starts_with("pub (crate) async fn charge < 'a > (req : & 'a Req , op : & str) -> Result < R , E > {"),
            "{out}"
        );
        for piece in [
            "{ fn __idem_marker () { } let mut __idem_prep",
            ":: idem_core :: __private :: Prepare :: new (:: idem_core :: __private :: installed () , & :: idem_core :: __private :: default_name (__idem_marker , & [])) ;",
            "__idem_prep . fingerprint (& req) ;",
            "__idem_prep . fingerprint (& op) ;",
            "__idem_prep . part (& (req . order_id)) ;",
            "__idem_prep . part (& (op)) ;",
            "__idem_prep . ttl_ms (3600000u64) ;",
            ":: idem_core :: __private :: run :: < Result < R , E > , _ > (__idem_prep , async move {",
            "body ()",
            "body () }) . await }",
        ] {
            assert!(out.contains(piece), "missing `{piece}` in {out}");
        }
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn methods_are_named_by_their_self_type_and_receivers_are_not_fingerprinted() {
        let out = expand(
            r#"store = "self.idem", scope = "self.tenant""#,
            "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
        );
        assert!(
            out.contains(
                "default_name (__idem_marker , & [:: core :: any :: type_name :: < Self > ()])"
            ),
            "{out}"
        );
        assert!(out.contains("handle (& (self . idem))"), "{out}");
        assert!(out.contains("fingerprint (& order)"), "{out}");
        assert!(!out.contains("fingerprint (& self"), "{out}");
        assert!(out.contains("key_by_fingerprint"), "{out}");
    }

    #[test]
    fn the_store_argument_is_not_fingerprinted_by_default() {
        let out = expand(
            r#"store = "idem", key = "id""#,
            "async fn f(idem: &Idempotency, id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(out.contains("fingerprint (& id)"), "{out}");
        assert!(!out.contains("fingerprint (& idem)"), "{out}");
    }

    #[test]
    fn on_error_the_function_is_emitted_unchanged_with_every_error() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand(r#"ttl = "soon", colour = "red", key = "nope""#, item);
        assert!(
            out.starts_with(&item.parse::<TokenStream>().unwrap().to_string()),
            "{out}"
        );
        assert_eq!(out.matches("compile_error").count(), 3, "{out}");
        assert!(!out.contains("__idem_prep"), "{out}");
    }

    #[test]
    fn a_misspelt_key_is_reported_once() {
        let out = expand(r#"keys = "id""#, "async fn f() -> Result<u64, E> { Ok(1) }");
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("unknown argument `keys`"), "{out}");
    }

    #[test]
    fn on_abort_is_set_through_private_only_when_given() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand(r#"key = "id", on_abort = "release""#, item);
        assert!(
            out.contains(
                "__idem_prep . on_abort (:: idem_core :: __private :: OnAbort :: Release) ;"
            ),
            "{out}"
        );
        let out = expand(r#"key = "id", on_abort = " fail ""#, item);
        assert!(out.contains("OnAbort :: Fail"), "{out}");
        let out = expand(r#"key = "id""#, item);
        assert!(!out.contains("on_abort"), "{out}");
    }

    #[test]
    fn an_unknown_on_abort_lists_the_choices() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand(r#"key = "id", on_abort = "later""#, item);
        assert!(
            out.contains("invalid value `later` for `on_abort`: write `hold`, `release` or `fail`"),
            "{out}"
        );
        let out = expand(r#"key = "id", on_abort = hold"#, item);
        assert!(out.contains("`on_abort` takes a string"), "{out}");
    }

    #[test]
    fn with_no_key_a_store_root_left_out_implicitly_is_an_error() {
        let item = "async fn transfer(ctx: &Ctx, to: String, amount: u64) -> Result<u64, E> { Ok(amount) }";
        let out = expand(r#"store = "ctx.idem""#, item);
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
            let out = expand(&format!(r#"store = "ctx.idem", {chosen}"#), item);
            assert!(!out.contains("compile_error"), "{chosen}: {out}");
        }
    }

    #[test]
    fn with_no_key_a_receiver_left_out_implicitly_is_an_error() {
        let item = "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }";
        let out = expand("", item);
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("and `self` is left out of it"), "{out}");
        assert!(out.contains(r#"`fingerprint = \"order\"`"#), "{out}");
        assert!(!out.contains("skip ="), "{out}");

        let out = expand(r#"store = "self.idem""#, item);
        assert!(out.contains("and `self` is left out of it"), "{out}");
        let out = expand(
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
        let out = expand(
            r#"store = "self.idem", keys = "order""#,
            "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
        );
        assert_eq!(out.matches("compile_error").count(), 1, "{out}");
        assert!(out.contains("unknown argument `keys`"), "{out}");
    }

    #[test]
    fn a_handle_passed_whole_is_not_an_implicit_exclusion() {
        let out = expand(
            r#"store = "idem""#,
            "async fn f(idem: &Idempotency, id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(!out.contains("compile_error"), "{out}");
        assert!(out.contains("fingerprint (& id)"), "{out}");
        assert!(!out.contains("fingerprint (& idem)"), "{out}");
    }

    #[test]
    fn crate_overrides_every_path_to_idem_core() {
        let out = expand(
            r#"crate = "my::idem", key = "id", store_err = "all""#,
            "async fn f(id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(!out.contains("idem_core"), "{out}");
        assert!(
            out.contains("my :: idem :: __private :: run_storing"),
            "{out}"
        );
        assert!(
            out.contains("my :: idem :: __private :: all_errors"),
            "{out}"
        );
    }
}
