//! Code generation: the function as written, with a body that runs the original one through
//! `idem_core::__private01::run`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{parse_quote, Expr, ExprAsync, Ident, ItemFn, Pat, Path, Stmt};

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
    let setup = setup(args, target, fingerprinted, owner, func, &krate, &private);
    if let Form::AsyncTrait { .. } = &target.form {
        if let Some(block) = async_trait_body(func) {
            allow_unused_rebindings(block, &used_by_setup(args, target, fingerprinted));
        }
    }
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
    target: &Target,
    fingerprinted: &[Ident],
    owner: Option<&Owner>,
    func: &ItemFn,
    krate: &Path,
    private: &TokenStream,
) -> Vec<TokenStream> {
    let prep = prep();
    let handle = match &args.store {
        Some(store) => {
            let private = respan(private.clone(), store.span());
            let store = with_argument_hygiene(store.to_token_stream(), target);
            quote_spanned!(store.span()=> #private::handle(&(#store)))
        }
        None => quote!(#krate::installed()),
    };
    let (path, name) = match &args.name {
        Some(name) => (name.to_token_stream(), name.to_token_stream()),
        None => {
            let erased: Vec<Ident> = named_inputs(target, fingerprinted, args)
                .filter(|input| input.has_impl_trait() && input.cfg.is_empty())
                .filter_map(|input| input.name.clone())
                .collect();
            let default = name::default_name(func, owner, &erased, private);
            (default.path, default.name)
        }
    };
    // Every function is registered under its name, so that two with one name refuse to run
    // instead of sharing records.
    let here = func.sig.ident.span();
    let registration = quote_spanned! {here=>
        #private::inventory::submit! {
            #private::Registration::new(#path, ::core::file!(), ::core::line!(), ::core::column!())
        }
    };

    let mut setup = vec![
        registration,
        quote!(let mut #prep = #private::Prepare::new(#handle, #name);),
        quote!(#prep.registered(#path);),
    ];
    if let Some(scope) = &args.scope {
        let value = with_argument_hygiene(scope.to_token_stream(), target);
        setup.push(quote_spanned!(scope.span()=> #prep.scope(&(#value));));
    }
    let type_params = name::type_params(func, owner);
    for arg in fingerprinted {
        let input = target.input(arg);
        let arg = &match declared_span(arg, target) {
            Some(declared) => {
                let mut arg = arg.clone();
                arg.set_span(arg.span().resolved_at(declared));
                arg
            }
            None => arg.clone(),
        };
        let cfg = input.map(|input| &input.cfg[..]).unwrap_or_default();
        // An argument whose type the caller picks is bounded by `Serialize` itself, so that
        // rustc's advice names a bound the user can add to the parameter.
        let add = match input {
            Some(input) if input.is_generic(&type_params) => quote!(fingerprint_param),
            _ => quote!(fingerprint),
        };
        setup.push(quote_spanned!(arg.span()=> #(#cfg)* #prep.#add(&#arg);));
    }
    match &args.key {
        Some((lit, operands)) => setup.extend(operands.iter().map(|operand| match operand {
            Operand::Literal(lit) => quote_spanned!(lit.span()=> #prep.part(#lit);),
            Operand::Path { expr, .. } => {
                let text = operand_text(expr);
                let value = operand_tokens(expr, target);
                quote_spanned!(lit.span()=> #prep.part_of(&(#value), #text);)
            }
            Operand::Display { expr, .. } => {
                let value = operand_tokens(expr, target);
                quote_spanned!(lit.span()=> #prep.part_display(&(#value));)
            }
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
        // The attribute checks `lease` against its own copy of the default TTL; this checks it
        // against idem-core's, where it is defined, should the two ever differ.
        let span = lease.lit.span();
        let private = respan(private.clone(), span);
        let ms = lease.ms;
        setup.push(quote_spanned!(span=> const _: () = #private::lease_within_default_ttl(#ms);));
    }
    if let Some(on_abort) = args.on_abort {
        let variant = Ident::new(on_abort.variant(), Span::call_site());
        setup.push(quote!(#prep.on_abort(#krate::OnAbort::#variant);));
    }
    setup
}

/// The arguments that identify a call: fingerprinted or rooting a key operand.
fn named_inputs<'a>(
    target: &'a Target,
    fingerprinted: &'a [Ident],
    args: &'a Args,
) -> impl Iterator<Item = &'a crate::target::Input> {
    let keyed: Vec<&Ident> = args
        .key
        .iter()
        .flat_map(|(_, operands)| operands.iter().filter_map(Operand::root))
        .collect();
    target.inputs.iter().filter(move |input| {
        input
            .name
            .as_ref()
            .is_some_and(|name| fingerprinted.contains(name) || keyed.contains(&name))
    })
}

/// The arguments the generated setup reads: fingerprinted ones, the roots of the key, and
/// every argument the scope and the store name.
fn used_by_setup(args: &Args, target: &Target, fingerprinted: &[Ident]) -> Vec<Ident> {
    let mut used = fingerprinted.to_vec();
    used.extend(
        args.key
            .iter()
            .flat_map(|(_, operands)| operands.iter().filter_map(Operand::root).cloned()),
    );
    for expr in args.scope.iter().chain(&args.store) {
        used.extend(target.arguments_in(expr.to_token_stream()));
    }
    used
}

/// Under `#[async_trait]` the body starts by moving each argument into itself (`let amount =
/// amount;`); one the body never uses would warn as unused, although the setup reads it.
fn allow_unused_rebindings(block: &mut ExprAsync, used: &[Ident]) {
    for stmt in &mut block.block.stmts {
        let Stmt::Local(local) = stmt else {
            continue;
        };
        let Pat::Ident(binding) = &local.pat else {
            continue;
        };
        let rebinds_itself = local.init.as_ref().is_some_and(
            |init| matches!(&*init.expr, Expr::Path(path) if path.path.is_ident(&binding.ident)),
        );
        if rebinds_itself && used.contains(&binding.ident) {
            local.attrs.push(parse_quote!(#[allow(unused_variables)]));
        }
    }
}

/// A key operand as the user wrote it, for messages: `req.customer.id`.
fn operand_text(expr: &Expr) -> String {
    expr.to_token_stream()
        .to_string()
        .replace(" . ", ".")
        .replace(' ', "")
}

/// `tokens`, an expression written inside a string of the attribute (`scope`, `store`), with
/// each identifier that names an argument (or `self`) resolved as that argument is: the
/// literal may come from elsewhere than the function (a `macro_rules!` passing it in), and an
/// identifier takes its hygiene from its span. The literal stays its location.
fn with_argument_hygiene(tokens: TokenStream, target: &Target) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(mut ident) => {
                if let Some(declared) = declared_span(&ident, target) {
                    ident.set_span(ident.span().resolved_at(declared));
                }
                TokenTree::Ident(ident)
            }
            TokenTree::Group(group) => {
                let mut inner = Group::new(
                    group.delimiter(),
                    with_argument_hygiene(group.stream(), target),
                );
                inner.set_span(group.span());
                TokenTree::Group(inner)
            }
            other => other,
        })
        .collect()
}

/// A key operand (`req.customer.id`): its root resolved as the argument it names (see
/// [`with_argument_hygiene`]), and every field name after it marked as generated, so that
/// rustc does not offer its fix for a misspelt field, which would replace the whole string
/// literal with the field's name. Fields resolve alike either way.
fn operand_tokens(expr: &Expr, target: &Target) -> TokenStream {
    let mut root = true;
    expr.to_token_stream()
        .into_iter()
        .map(|token| match token {
            TokenTree::Ident(mut ident) => {
                let resolved = match declared_span(&ident, target) {
                    Some(declared) if root => ident.span().resolved_at(declared),
                    _ => ident.span().resolved_at(Span::mixed_site()),
                };
                root = false;
                ident.set_span(resolved);
                TokenTree::Ident(ident)
            }
            other => other,
        })
        .collect()
}

/// Where the argument (or receiver) that `ident` names is declared.
fn declared_span(ident: &Ident, target: &Target) -> Option<Span> {
    if ident == "self" {
        return target.receiver_span;
    }
    target
        .inputs
        .iter()
        .filter_map(|input| input.name.as_ref())
        .find(|name| *name == ident)
        .map(Ident::span)
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
    let store_err = match &args.store_err {
        None => None,
        Some(StoreErr::All) => Some(quote!(#private::all_errors)),
        Some(StoreErr::When(predicate)) => Some(predicate.to_token_stream()),
    };
    match (store_err, &args.response_hook) {
        (None, None) => quote_spanned!(span=> #private::run::<#ret, _>(#prep, #body).await),
        (Some(store_err), None) => quote_spanned! {span=>
            #private::run_storing::<#ret, _, _>(#prep, #store_err, #body).await
        },
        (None, Some(hook)) => quote_spanned! {span=>
            #private::run_hooked::<#ret, _, _>(#prep, #hook, #body).await
        },
        (Some(store_err), Some(hook)) => quote_spanned! {span=>
            #private::run_storing_hooked::<#ret, _, _, _>(#prep, #store_err, #hook, #body).await
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
mod tests;
