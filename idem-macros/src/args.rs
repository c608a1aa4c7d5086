//! Parsing and checking the attribute's arguments: `#[idempotent(key = "...", ttl = "24h")]`.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path, Token};

use crate::duration::{self, Millis};
use crate::errors::Errors;
use crate::key::{self, Operand};

/// Every argument the attribute takes, in the order the docs list them.
pub(crate) const VALID: &[&str] = &[
    "key",
    "ttl",
    "lease",
    "on_abort",
    "scope",
    "fingerprint",
    "skip",
    "wait",
    "store_err",
    "store",
    "name",
    "crate",
];

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
    pub(crate) store_err: Option<StoreErr>,
    pub(crate) store: Option<Expr>,
    pub(crate) name: Option<LitStr>,
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
    pub(crate) fn names(&self) -> (&'static str, &[Ident]) {
        match self {
            Selection::Only(names) => ("fingerprint", names),
            Selection::Skip(names) => ("skip", names),
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

/// One `name = value` pair as written.
struct RawArg {
    name: Ident,
    value: Expr,
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let name = Ident::parse_any(input)?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "`{name}` needs a value, e.g. `{}`",
                    example(&name.to_string())
                ),
            ));
        }
        input.parse::<Token![=]>()?;
        let value = input.parse()?;
        Ok(RawArg { name, value })
    }
}

fn example(name: &str) -> &'static str {
    match name {
        "key" => "key = \"req.order_id + op\"",
        "ttl" => "ttl = \"24h\"",
        "lease" => "lease = \"30s\"",
        "on_abort" => "on_abort = \"hold\"",
        "scope" => "scope = \"req.tenant\"",
        "fingerprint" => "fingerprint = \"req, op\"",
        "skip" => "skip = \"db\"",
        "wait" => "wait = \"10s\"",
        "store_err" => "store_err = \"all\"",
        "store" => "store = \"self.idem\"",
        "name" => "name = \"payments::charge\"",
        "crate" => "crate = \"idem_core\"",
        _ => "key = \"...\"",
    }
}

fn valid_list() -> String {
    VALID
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
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
        let mut seen: Vec<String> = Vec::new();
        for RawArg { name, value } in raw {
            let text = name.to_string();
            if !VALID.contains(&text.as_str()) {
                errors.push(syn::Error::new(
                    name.span(),
                    format!(
                        "unknown argument `{text}`; valid arguments are {}",
                        valid_list()
                    ),
                ));
                continue;
            }
            if seen.contains(&text) {
                errors.push(syn::Error::new(
                    name.span(),
                    format!("duplicate argument `{text}`; give each argument once"),
                ));
                continue;
            }
            seen.push(text.clone());
            let Some(lit) = string(&text, &value, errors) else {
                continue;
            };
            if let Err(error) = args.set(&text, &lit) {
                errors.push(error);
            }
        }
        args.check_lease(errors);
        args
    }

    fn set(&mut self, name: &str, lit: &LitStr) -> syn::Result<()> {
        match name {
            "key" => self.key = Some((lit.clone(), key::parse(lit)?)),
            "ttl" | "lease" | "wait" => {
                let millis = duration::parse(name, lit)?;
                let slot = match name {
                    "ttl" => &mut self.ttl,
                    "lease" => &mut self.lease,
                    _ => &mut self.wait,
                };
                *slot = Some(millis);
            }
            "on_abort" => self.on_abort = Some(OnAbort::parse(lit)?),
            "scope" => self.scope = Some(expression(name, lit)?),
            "fingerprint" | "skip" => {
                let names = idents(name, lit)?;
                if let Some(other) = &self.selection {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "`{name}` cannot be combined with `{}`: list the fingerprinted \
                             arguments with `fingerprint`, or the others with `skip`",
                            other.names().0
                        ),
                    ));
                }
                self.selection = Some(if name == "skip" {
                    Selection::Skip(names)
                } else {
                    Selection::Only(names)
                });
            }
            "store_err" => {
                self.store_err = Some(if lit.value().trim() == "all" {
                    StoreErr::All
                } else {
                    StoreErr::When(expression(name, lit)?)
                });
            }
            "store" => self.store = Some(expression(name, lit)?),
            "name" => {
                if lit.value().trim().is_empty() {
                    return Err(syn::Error::new(
                        lit.span(),
                        "`name` must not be empty: give the function a stable name, e.g. `name = \"payments::charge\"`",
                    ));
                }
                self.name = Some(lit.clone());
            }
            _ => {
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

    fn check_lease(&self, errors: &mut Errors) {
        let Some(lease) = &self.lease else {
            return;
        };
        let (ttl, ttl_text) = match &self.ttl {
            Some(ttl) => (ttl.ms, format!("`ttl` ({})", duration::display(ttl.ms))),
            None => (DEFAULT_TTL_MS, "the default `ttl` (24h)".to_owned()),
        };
        if lease.ms > ttl {
            errors.push(syn::Error::new(
                lease.lit.span(),
                format!(
                    "`lease` ({}) is longer than {ttl_text}: shorten `lease` or lengthen `ttl`",
                    duration::display(lease.ms)
                ),
            ));
        }
    }
}

const DEFAULT_TTL_MS: u64 = 24 * 3_600_000;

/// The string literal an argument's value must be.
fn string(name: &str, value: &Expr, errors: &mut Errors) -> Option<LitStr> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Str(lit), ..
    }) = value
    {
        return Some(lit.clone());
    }
    errors.push(syn::Error::new(
        value.span(),
        format!("`{name}` takes a string, e.g. `{}`", example(name)),
    ));
    None
}

fn expression(name: &str, lit: &LitStr) -> syn::Result<Expr> {
    lit.parse::<Expr>().map_err(|error| {
        syn::Error::new(
            lit.span(),
            format!("`{name}` must be a Rust expression: {error}"),
        )
    })
}

fn idents(name: &str, lit: &LitStr) -> syn::Result<Vec<Ident>> {
    let parser = Punctuated::<Ident, Token![,]>::parse_terminated;
    lit.parse_with(parser)
        .map(|names| names.into_iter().collect())
        .map_err(|_| {
            syn::Error::new(
                lit.span(),
                format!(
                    "`{name}` takes argument names separated by commas, e.g. `{}`",
                    example(name)
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
}
