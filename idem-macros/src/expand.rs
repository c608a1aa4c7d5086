//! Code generation: the function as written, with a body that runs the original one through
//! `idem_core::__private01::run`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{parse_quote, Ident, ItemFn, Path};

use crate::args::{Args, StoreErr};
use crate::key::Operand;
use crate::name::{self, Owner};
use crate::target::{async_trait_body, Form, Target};

/// Replaces the body of `func` with one that runs the original body through `__private01::run`.
pub(crate) fn expand(
    args: &Args,
    target: &Target,
    fingerprinted: &[Ident],
    owner: Option<&Owner>,
    func: &mut ItemFn,
) {
    let krate: Path = args
        .krate
        .clone()
        .unwrap_or_else(|| parse_quote!(::idem_core));
    let private = quote!(#krate::__private01);
    let setup = setup(args, fingerprinted, owner, func, &private);
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
}

fn prep() -> Ident {
    Ident::new("__idem_prep", Span::call_site())
}

/// The statements that put the call together in `__idem_prep`: handle, name, scope,
/// fingerprinted arguments, key parts and durations.
fn setup(
    args: &Args,
    fingerprinted: &[Ident],
    owner: Option<&Owner>,
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
        None => name::default_name(func, owner, private),
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
    if let (Some(lease), None) = (&args.lease, &args.ttl) {
        // Checked against the default TTL where it is defined, at compile time all the same.
        let span = lease.lit.span();
        let private = respan(private.clone(), span);
        let ms = lease.ms;
        setup.push(quote_spanned!(span=> const _: () = #private::lease_within_default_ttl(#ms);));
    }
    if let Some(on_abort) = args.on_abort {
        let variant = Ident::new(on_abort.variant(), Span::call_site());
        setup.push(quote!(#prep.on_abort(#private::OnAbort::#variant);));
    }
    setup
}

/// `__private01::run(__idem_prep, <original body as a future>).await`.
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
    use crate::{expand_method_text, expand_text};

    #[test]
    fn the_signature_is_kept_and_the_body_runs_through_private_run() {
        let out = expand_text(
            r#"key = "req.order_id + op", ttl = "1h""#,
            "pub(crate) async fn charge<'a>(req: &'a Req, op: &str) -> Result<R, E> { body() }",
        );
        assert!(
            out.starts_with("pub (crate) async fn charge < 'a > (req : & 'a Req , op : & str) -> Result < R , E > {"),
            "{out}"
        );
        for piece in [
            r#"{ let mut __idem_prep = :: idem_core :: __private01 :: Prepare :: new (:: idem_core :: __private01 :: installed () , :: core :: concat ! (:: core :: module_path ! () , "::charge")) ;"#,
            "__idem_prep . fingerprint (& req) ;",
            "__idem_prep . fingerprint (& op) ;",
            "__idem_prep . part (& (req . order_id)) ;",
            "__idem_prep . part (& (op)) ;",
            "__idem_prep . ttl_ms (3600000u64) ;",
            ":: idem_core :: __private01 :: run :: < Result < R , E > , _ > (__idem_prep , async move {",
            "body ()",
            "body () }) . await }",
        ] {
            assert!(out.contains(piece), "missing `{piece}` in {out}");
        }
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn methods_are_named_by_their_self_type_and_receivers_are_not_fingerprinted() {
        let out = expand_method_text(
            r#"store = "self.idem", scope = "self.tenant""#,
            "async fn charge(&self, order: u64) -> Result<u64, E> { Ok(order) }",
        );
        assert!(
            out.contains(r#"Prepare :: new (:: idem_core :: __private01 :: handle (& (self . idem)) , :: core :: concat ! (:: core :: module_path ! () , "::Service::charge")) ;"#),
            "{out}"
        );
        assert!(out.contains("handle (& (self . idem))"), "{out}");
        assert!(out.contains("fingerprint (& order)"), "{out}");
        assert!(!out.contains("fingerprint (& self"), "{out}");
        assert!(out.contains("key_by_fingerprint"), "{out}");
    }

    #[test]
    fn on_abort_is_set_through_private_only_when_given() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand_text(r#"key = "id", on_abort = "release""#, item);
        assert!(
            out.contains(
                "__idem_prep . on_abort (:: idem_core :: __private01 :: OnAbort :: Release) ;"
            ),
            "{out}"
        );
        let out = expand_text(r#"key = "id", on_abort = " fail ""#, item);
        assert!(out.contains("OnAbort :: Fail"), "{out}");
        let out = expand_text(r#"key = "id""#, item);
        assert!(!out.contains("on_abort"), "{out}");
    }

    #[test]
    fn crate_overrides_every_path_to_idem_core() {
        let out = expand_text(
            r#"crate = "my::idem", key = "id", store_err = "all""#,
            "async fn f(id: u64) -> Result<u64, E> { Ok(id) }",
        );
        assert!(!out.contains("idem_core"), "{out}");
        assert!(
            out.contains("my :: idem :: __private01 :: run_storing"),
            "{out}"
        );
        assert!(
            out.contains("my :: idem :: __private01 :: all_errors"),
            "{out}"
        );
    }

    #[test]
    fn without_ttl_nothing_sets_it_and_lease_is_checked_against_the_default_by_idem_core() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand_text(r#"key = "id", lease = "1m""#, item);
        assert!(!out.contains("ttl_ms"), "{out}");
        assert!(
            out.contains(
                "const _ : () = :: idem_core :: __private01 :: lease_within_default_ttl (60000u64) ;"
            ),
            "{out}"
        );
        let out = expand_text(r#"key = "id", lease = "1m", ttl = "1h""#, item);
        assert!(out.contains("ttl_ms (3600000u64)"), "{out}");
        assert!(!out.contains("lease_within_default_ttl"), "{out}");
    }
}
