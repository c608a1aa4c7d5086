//! Parsing and checking the attribute's arguments: `#[idempotent(key = "...", ttl = "24h")]`.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path, Token};

use crate::arg::Arg;
use crate::duration::{self, Millis};
use crate::errors::Errors;
use crate::key::{self, Operand};

/// The arguments of one `#[idempotent(...)]`, checked on their own (not yet against the
/// function).
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) key: Option<(LitStr, Vec<Operand>)>,
    pub(crate) ttl: Option<Millis>,
    pub(crate) lease: Option<Millis>,
    pub(crate) wait: Option<Millis>,
    pub(crate) on_abort: Option<OnAbort>,
    pub(crate) scope: Option<Expr>,
    pub(crate) selection: Option<Selection>,
    /// `skip` names `self`: the receiver does not tell calls apart (one service). Kept apart
    /// from `selection`, so that it combines with `fingerprint`.
    pub(crate) receiver_skipped: Option<Ident>,
    pub(crate) store_err: Option<StoreErr>,
    pub(crate) store: Option<Expr>,
    pub(crate) name: Option<LitStr>,
    /// `response_hook = "path"`: a `fn(T, &Replay) -> T` every replayed value goes through.
    pub(crate) response_hook: Option<Expr>,
    pub(crate) krate: Option<Path>,
}

/// Which arguments are fingerprinted, when not all of them.
pub(crate) enum Selection {
    /// `fingerprint = "a, b"`: only these.
    Only(Vec<Ident>),
    /// `skip = "db"`: all but these.
    Skip(Vec<Ident>),
}

impl Selection {
    /// The argument it was given with, and the names it lists.
    pub(crate) fn names(&self) -> (Arg, &[Ident]) {
        match self {
            Selection::Only(names) => (Arg::Fingerprint, names),
            Selection::Skip(names) => (Arg::Skip, names),
        }
    }
}

/// What a panic or a dropped future does once the body started (`on_abort = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnAbort {
    Hold,
    Release,
    Fail,
}

impl OnAbort {
    /// The variant of `idem_core::OnAbort` it stands for.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            OnAbort::Hold => "Hold",
            OnAbort::Release => "Release",
            OnAbort::Fail => "Fail",
        }
    }

    fn parse(lit: &LitStr) -> syn::Result<OnAbort> {
        match lit.value().trim() {
            "hold" => Ok(OnAbort::Hold),
            "release" => Ok(OnAbort::Release),
            "fail" => Ok(OnAbort::Fail),
            other => Err(syn::Error::new(
                lit.span(),
                format!(
                    "invalid value `{other}` for `on_abort`: write `hold`, `release` or `fail`"
                ),
            )),
        }
    }
}

/// Which errors `store_err` stores.
pub(crate) enum StoreErr {
    /// `store_err = "all"`.
    All,
    /// `store_err = "path::to::predicate"`: a `fn(&E) -> bool` (any expression of that type).
    When(Expr),
}

/// One `name = value` pair as written; the value may be missing.
struct RawArg {
    name: Ident,
    value: Option<Expr>,
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name = Ident::parse_any(input)?;
        let value = match input.parse::<Option<Token![=]>>()? {
            Some(_) => Some(input.parse()?),
            None => None,
        };
        Ok(RawArg { name, value })
    }
}

impl Args {
    /// Parses and checks the arguments, reporting every problem into `errors`.
    pub(crate) fn parse(tokens: proc_macro2::TokenStream, errors: &mut Errors) -> Args {
        let parser = Punctuated::<RawArg, Token![,]>::parse_terminated;
        let raw = match syn::parse::Parser::parse2(parser, tokens) {
            Ok(raw) => raw,
            Err(error) => {
                errors.push(error);
                return Args::default();
            }
        };
        let mut args = Args::default();
        let mut seen: Vec<Arg> = Vec::new();
        for RawArg { name, value } in raw {
            let Some(arg) = Arg::named(&name.to_string()) else {
                errors.push(syn::Error::new(
                    name.span(),
                    format!(
                        "unknown argument `{name}`; valid arguments are {}",
                        Arg::list()
                    ),
                ));
                continue;
            };
            if seen.contains(&arg) {
                errors.push(syn::Error::new(
                    name.span(),
                    format!("duplicate argument `{arg}`; give each argument once"),
                ));
                continue;
            }
            seen.push(arg);
            let Some(lit) = string(arg, &name, value.as_ref(), errors) else {
                continue;
            };
            if let Err(error) = args.set(arg, &lit) {
                errors.push(error);
            }
        }
        args.check_lease(errors);
        args
    }

    fn set(&mut self, arg: Arg, lit: &LitStr) -> syn::Result<()> {
        match arg {
            Arg::Key => self.key = Some((lit.clone(), key::parse(lit)?)),
            Arg::Ttl => self.ttl = Some(duration::parse(arg, lit)?),
            Arg::Lease => self.lease = Some(duration::parse(arg, lit)?),
            Arg::Wait => self.wait = Some(duration::parse(arg, lit)?),
            Arg::OnAbort => self.on_abort = Some(OnAbort::parse(lit)?),
            Arg::Scope => self.scope = Some(expression(arg, lit)?),
            Arg::Fingerprint | Arg::Skip => {
                let mut names = idents(arg, lit)?;
                if arg == Arg::Skip {
                    self.receiver_skipped = names.iter().find(|name| *name == "self").cloned();
                    names.retain(|name| name != "self");
                    if names.is_empty() {
                        return Ok(());
                    }
                }
                if let Some(other) = &self.selection {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "`{arg}` cannot be combined with `{}`: list the fingerprinted \
                             arguments with `fingerprint`, or the others with `skip`",
                            other.names().0
                        ),
                    ));
                }
                self.selection = Some(if arg == Arg::Skip {
                    Selection::Skip(names)
                } else {
                    Selection::Only(names)
                });
            }
            Arg::StoreErr => {
                self.store_err = Some(if lit.value().trim() == "all" {
                    StoreErr::All
                } else {
                    StoreErr::When(expression(arg, lit)?)
                });
            }
            Arg::Store => self.store = Some(expression(arg, lit)?),
            Arg::ResponseHook => self.response_hook = Some(expression(arg, lit)?),
            Arg::Name => {
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`name` must not be empty: give the function a stable name, e.g. `name = \"payments::charge\"`",
                    ));
                }
                self.name = Some(lit.clone());
            }
            Arg::Crate => {
                self.krate = Some(lit.parse::<Path>().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        "`crate` must be a path to idem_core, e.g. `crate = \"idem_core\"` or `crate = \"::my_dep::idem_core\"`",
                    )
                })?);
            }
        }
        Ok(())
    }

    /// Checks `lease` against `ttl`, or against the default TTL when none is given.
    fn check_lease(&self, errors: &mut Errors) {
        let Some(lease) = &self.lease else {
            return;
        };
        let message = match &self.ttl {
            Some(ttl) if lease.ms > ttl.ms => format!(
                "`lease` ({}) is longer than `ttl` ({}): shorten `lease` or lengthen `ttl`",
                duration::display(lease.ms),
                duration::display(ttl.ms)
            ),
            None if lease.ms > duration::DEFAULT_TTL_MS => format!(
                "`lease` ({}) is longer than the default `ttl` (24h, `idem_core::DEFAULT_TTL`): \
                 shorten `lease`, or give a `ttl` at least as long, e.g. `ttl = \"{}\"`",
                duration::display(lease.ms),
                duration::display(lease.ms),
            ),
            _ => return,
        };
        errors.push(syn::Error::new(lease.lit.span(), message));
    }
}

/// The string literal an argument's value must be.
fn string(arg: Arg, name: &Ident, value: Option<&Expr>, errors: &mut Errors) -> Option<LitStr> {
    match value.map(ungrouped) {
        Some(Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        })) => return Some(lit.clone()),
        Some(Expr::Macro(mac)) => errors.push(syn::Error::new(
            mac.span(),
            format!(
                "`{arg}` takes a string literal, and a macro call such as `concat!(..)` is not \
                 expanded inside an attribute: write the literal, e.g. `{}`, or pass it through \
                 `macro_rules!` as a `$name:literal`",
                arg.example()
            ),
        )),
        Some(value) => errors.push(syn::Error::new(
            value.span(),
            format!("`{arg}` takes a string, e.g. `{}`", arg.example()),
        )),
        None => errors.push(syn::Error::new(
            name.span(),
            format!("`{arg}` needs a value, e.g. `{}`", arg.example()),
        )),
    }
    None
}

/// `expr` without the invisible groups a `macro_rules!` fragment (`$key:literal`,
/// `$key:expr`) arrives in.
fn ungrouped(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungrouped(&group.expr),
        other => other,
    }
}

fn expression(arg: Arg, lit: &LitStr) -> syn::Result<Expr> {
    lit.parse::<Expr>().map_err(|error| {
        syn::Error::new(
            lit.span(),
            format!("`{arg}` must be a Rust expression: {error}"),
        )
    })
}

fn idents(arg: Arg, lit: &LitStr) -> syn::Result<Vec<Ident>> {
    // `self` is a name too: a method may list its receiver (`skip = "self"`).
    let parser = Punctuated::<Ident, Token![,]>::parse_terminated_with;
    let parser = |input: ParseStream<'_>| parser(input, Ident::parse_any);
    lit.parse_with(parser)
        .map(|names| names.into_iter().collect())
        .map_err(|_| {
            syn::Error::new(
                lit.span(),
                format!(
                    "`{arg}` takes argument names separated by commas, e.g. `{}`",
                    arg.example()
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use crate::expand_text;

    #[test]
    fn an_unknown_on_abort_lists_the_choices() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand_text(r#"key = "id", on_abort = "later""#, item);
        assert!(
            out.contains("invalid value `later` for `on_abort`: write `hold`, `release` or `fail`"),
            "{out}"
        );
        let out = expand_text(r#"key = "id", on_abort = hold"#, item);
        assert!(out.contains("`on_abort` takes a string"), "{out}");
    }

    #[test]
    fn a_name_without_a_value_is_reported_with_an_example() {
        let item = "async fn f(id: u64) -> Result<u64, E> { Ok(id) }";
        let out = expand_text(r#"key = "id", ttl, keys"#, item);
        assert_eq!(out.matches("compile_error").count(), 2, "{out}");
        assert!(
            out.contains(r#"`ttl` needs a value, e.g. `ttl = \"24h\"`"#),
            "{out}"
        );
        assert!(out.contains("unknown argument `keys`"), "{out}");
    }
}
