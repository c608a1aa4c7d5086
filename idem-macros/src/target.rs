//! The function the attribute is on: which form it has and what its arguments are called.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{
    Attribute, Block, Expr, ExprAsync, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments,
    ReturnType, Stmt, Type, TypeParamBound,
};

use crate::errors::Errors;

/// How the function's body is written.
pub(crate) enum Form {
    /// `async fn f(..) -> R { body }`.
    Async { ret: Type },
    /// What `#[async_trait]` made of an `async fn` before this attribute ran:
    /// `fn f(..) -> Pin<Box<dyn Future<Output = R> + ..>> { Box::pin(async move { body }) }`.
    AsyncTrait { ret: Type },
}

impl Form {
    pub(crate) fn ret(&self) -> &Type {
        match self {
            Form::Async { ret } | Form::AsyncTrait { ret } => ret,
        }
    }
}

/// One argument of the function.
pub(crate) struct Input {
    /// Its name, or `None` for `_` or a destructuring pattern.
    pub(crate) name: Option<Ident>,
    /// Whether it is `_`, which the body cannot see.
    pub(crate) wildcard: bool,
    pub(crate) ty: Type,
    /// Its `#[cfg(..)]` attributes: it exists only where they hold.
    pub(crate) cfg: Vec<Attribute>,
    pub(crate) span: Span,
}

impl Input {
    /// Whether its type is chosen by the caller: `impl Trait` (anywhere in it) or one of the
    /// function's or its impl's type parameters in `params`, by value or behind references.
    pub(crate) fn is_generic(&self, params: &[Ident]) -> bool {
        mentions_impl(&self.ty) || is_param(&self.ty, params)
    }

    /// Whether its type holds `impl Trait`, which the default name does not spell.
    pub(crate) fn has_impl_trait(&self) -> bool {
        mentions_impl(&self.ty)
    }
}

/// Whether `ty` holds an `impl Trait` type.
fn mentions_impl(ty: &Type) -> bool {
    fn any_impl(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => ident == "impl",
            TokenTree::Group(group) => any_impl(group.stream()),
            _ => false,
        })
    }
    any_impl(ty.to_token_stream())
}

/// Whether `ty` is one of `params`, by value or behind references.
fn is_param(ty: &Type, params: &[Ident]) -> bool {
    match ty {
        Type::Reference(r) => is_param(&r.elem, params),
        Type::Paren(p) => is_param(&p.elem, params),
        Type::Path(path) if path.qself.is_none() => path
            .path
            .get_ident()
            .is_some_and(|ident| params.contains(ident)),
        _ => false,
    }
}

/// The checked function.
pub(crate) struct Target {
    pub(crate) form: Form,
    pub(crate) has_receiver: bool,
    /// Where the receiver's `self` is written, for a method.
    pub(crate) receiver_span: Option<Span>,
    /// Whether it is certainly in an `impl` or a trait: it has a receiver or mentions `Self`.
    pub(crate) in_impl: bool,
    pub(crate) inputs: Vec<Input>,
}

impl Target {
    /// Checks that `func` can be made idempotent, reporting every problem into `errors`.
    pub(crate) fn inspect(func: &ItemFn, errors: &mut Errors) -> Option<Target> {
        let sig = &func.sig;
        if let Some(constness) = &sig.constness {
            errors.push(syn::Error::new(
                constness.span,
                "`#[idempotent]` cannot go on a `const fn`: it reserves a key in a store at run \
                 time; remove `const` and make the function `async`",
            ));
            return None;
        }
        let form = match (&sig.asyncness, &sig.output) {
            (_, ReturnType::Default) => {
                errors.push(syn::Error::new(
                    sig.ident.span(),
                    "`#[idempotent]` functions must return a `Result`: the `Ok` value is stored \
                     and replayed and idempotency failures are returned as the `Err`; add \
                     `-> Result<T, E>`",
                ));
                return None;
            }
            (Some(_), ReturnType::Type(_, ret)) => Form::Async {
                ret: (**ret).clone(),
            },
            (None, ReturnType::Type(_, ret)) => match async_trait_output(ret, func) {
                Some(ret) => Form::AsyncTrait { ret },
                None => {
                    errors.push(syn::Error::new(
                        sig.fn_token.span,
                        format!(
                            "`#[idempotent]` needs an `async fn`: make it `async fn {}`",
                            sig.ident
                        ),
                    ));
                    return None;
                }
            },
        };
        if let Some(borrowed) = borrowed_ok(form.ret()) {
            errors.push(syn::Error::new(
                borrowed.span(),
                format!(
                    "the `Ok` type of an `#[idempotent]` function must be owned: it is stored and \
                     replayed to later calls, which a borrowed `{}` cannot outlive; return an \
                     owned type (`String` for `&str`, `Vec<T>` for `&[T]`)",
                    crate::name::spell(borrowed.to_token_stream())
                ),
            ));
        }
        let mut has_receiver = false;
        let mut inputs = Vec::new();
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(_) => has_receiver = true,
                FnArg::Typed(typed) => inputs.push(Input {
                    name: match &*typed.pat {
                        Pat::Ident(pat) if pat.subpat.is_none() => Some(pat.ident.clone()),
                        _ => None,
                    },
                    wildcard: matches!(&*typed.pat, Pat::Wild(_)),
                    ty: (*typed.ty).clone(),
                    cfg: typed
                        .attrs
                        .iter()
                        .filter(|attr| attr.path().is_ident("cfg"))
                        .cloned()
                        .collect(),
                    span: typed.pat.span(),
                }),
            }
        }
        let in_impl = has_receiver
            || mentions_self(sig.to_token_stream())
            || mentions_self(func.block.to_token_stream());
        Some(Target {
            form,
            has_receiver,
            receiver_span: sig.receiver().map(|receiver| receiver.self_token.span),
            in_impl,
            inputs,
        })
    }

    /// The argument names, for error messages: "`req`, `op`".
    pub(crate) fn arg_list(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        if self.has_receiver {
            names.push("`self`".into());
        }
        names.extend(
            self.inputs
                .iter()
                .filter_map(|input| input.name.as_ref())
                .map(|n| format!("`{n}`")),
        );
        if names.is_empty() {
            "it has none".into()
        } else {
            format!("the arguments are {}", names.join(", "))
        }
    }

    pub(crate) fn has_arg(&self, name: &Ident) -> bool {
        self.input(name).is_some()
    }

    /// The arguments that `tokens` (an expression of the attribute) name, in order.
    pub(crate) fn arguments_in(&self, tokens: TokenStream) -> Vec<Ident> {
        let mut found = Vec::new();
        for token in tokens {
            match token {
                TokenTree::Ident(ident) if self.has_arg(&ident) => found.push(ident),
                TokenTree::Group(group) => found.extend(self.arguments_in(group.stream())),
                _ => {}
            }
        }
        found
    }

    /// The argument called `name`.
    pub(crate) fn input(&self, name: &Ident) -> Option<&Input> {
        self.inputs
            .iter()
            .find(|input| input.name.as_ref() == Some(name))
    }
}

/// The first reference in the `Ok` type of `ret` when `ret` is spelt `Result<T, ..>` (any
/// path ending in `Result`): a borrowed value cannot be stored and replayed.
fn borrowed_ok(ret: &Type) -> Option<&syn::TypeReference> {
    let Type::Path(path) = ret else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if segment.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    let ok = args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })?;
    first_reference(ok)
}

/// The first reference type in `ty`, outermost first.
fn first_reference(ty: &Type) -> Option<&syn::TypeReference> {
    match ty {
        Type::Reference(reference) => Some(reference),
        Type::Paren(paren) => first_reference(&paren.elem),
        Type::Group(group) => first_reference(&group.elem),
        Type::Array(array) => first_reference(&array.elem),
        Type::Slice(slice) => first_reference(&slice.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(first_reference),
        Type::Path(path) => path.path.segments.iter().find_map(|segment| {
            let PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(ty) => first_reference(ty),
                _ => None,
            })
        }),
        _ => None,
    }
}

/// Whether `tokens` use the type `Self`, which only exists in an `impl` or a trait.
fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == "Self",
        TokenTree::Group(group) => mentions_self(group.stream()),
        _ => false,
    })
}

/// The body's async block under `#[async_trait]`, to be wrapped.
pub(crate) fn async_trait_body(func: &mut ItemFn) -> Option<&mut ExprAsync> {
    if !is_box_pin_async(&func.block) {
        return None;
    }
    match &mut func.block.stmts[..] {
        [Stmt::Expr(Expr::Call(call), None)] => match call.args.first_mut() {
            Some(Expr::Async(block)) => Some(block),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `block` is exactly `Box::pin(async move { .. })`.
fn is_box_pin_async(block: &Block) -> bool {
    let [Stmt::Expr(Expr::Call(call), None)] = &block.stmts[..] else {
        return false;
    };
    let Expr::Path(path) = &*call.func else {
        return false;
    };
    let mut segments = path.path.segments.iter().rev().map(|s| s.ident.to_string());
    let is_box_pin =
        segments.next().as_deref() == Some("pin") && segments.next().as_deref() == Some("Box");
    is_box_pin
        && call.args.len() == 1
        && matches!(call.args.first(), Some(Expr::Async(block)) if block.capture.is_some())
}

/// `R` when `ret` is `Pin<Box<dyn Future<Output = R> + ..>>` and the body is
/// `Box::pin(async move { .. })`.
fn async_trait_output(ret: &Type, func: &ItemFn) -> Option<Type> {
    if !is_box_pin_async(&func.block) {
        return None;
    }
    let boxed = last_generic(ret, "Pin")?;
    let Type::TraitObject(object) = last_generic(boxed, "Box")? else {
        return None;
    };
    object.bounds.iter().find_map(|bound| match bound {
        TypeParamBound::Trait(bound) => {
            let segment = bound.path.segments.last()?;
            if segment.ident != "Future" {
                return None;
            }
            let PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                    Some(assoc.ty.clone())
                }
                _ => None,
            })
        }
        _ => None,
    })
}

/// The only type argument of `ty` when `ty` is a path ending in `name<..>`.
fn last_generic<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if segment.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}
