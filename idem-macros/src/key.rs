//! Key expressions: `key = "req.order_id + op + \"-v2\""`, operands joined by `+`.

use syn::{BinOp, Expr, ExprLit, Ident, Lit, LitStr, Member};

/// One operand of a key expression.
pub(crate) enum Operand {
    /// A string literal, used as written.
    Literal(LitStr),
    /// An argument or a field path rooted at one (`op`, `req.customer.id`, `self.tenant`).
    Path { root: Ident, expr: Expr },
    /// `display(path)`: such a path, keyed by its `Display` text.
    Display { root: Ident, expr: Expr },
}

impl Operand {
    pub(crate) fn root(&self) -> Option<&Ident> {
        match self {
            Operand::Literal(_) => None,
            Operand::Path { root, .. } | Operand::Display { root, .. } => Some(root),
        }
    }
}

/// Parses a key expression. Each operand must be a string literal or a path rooted at an
/// argument; whether the root is an argument is checked against the function later.
pub(crate) fn parse(lit: &LitStr) -> syn::Result<Vec<Operand>> {
    let expr: Expr = lit.parse().map_err(|_| {
        syn::Error::new(
            lit.span(),
            "`key` must be operands joined by `+`, e.g. `key = \"req.order_id + op\"`",
        )
    })?;
    let mut operands = Vec::new();
    flatten(expr, &mut operands);
    let mut out = Vec::with_capacity(operands.len());
    let mut error: Option<syn::Error> = None;
    for operand in operands {
        match classify(operand, lit) {
            Ok(operand) => out.push(operand),
            Err(e) => match &mut error {
                Some(first) => first.combine(e),
                None => error = Some(e),
            },
        }
    }
    match error {
        Some(error) => Err(error),
        None => Ok(out),
    }
}

fn flatten(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::Binary(binary) if matches!(binary.op, BinOp::Add(_)) => {
            flatten(*binary.left, out);
            flatten(*binary.right, out);
        }
        other => out.push(other),
    }
}

fn classify(expr: Expr, lit: &LitStr) -> syn::Result<Operand> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Str(text),
        ..
    }) = &expr
    {
        return Ok(Operand::Literal(text.clone()));
    }
    if let Some(inner) = display_argument(&expr) {
        if let Some(root) = root(inner) {
            let expr = inner.clone();
            return Ok(Operand::Display { root, expr });
        }
    }
    match root(&expr) {
        Some(root) => Ok(Operand::Path { root, expr }),
        None => Err(syn::Error::new(
            lit.span(),
            format!(
                "key operand `{}` is not an argument, a field path rooted at an argument \
                 (`req.order_id`, `self.tenant`), such a path's `Display` text \
                 (`display(req.at)`) or a string literal; compute the value in the caller and \
                 pass it as an argument",
                quote::ToTokens::to_token_stream(&expr)
                    .to_string()
                    .replace(" . ", ".")
                    .replace(" (", "(")
                    .replace(" )", ")")
            ),
        )),
    }
}

/// The argument of `display(..)`, when `expr` is such a call.
fn display_argument(expr: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = expr else {
        return None;
    };
    let Expr::Path(function) = &*call.func else {
        return None;
    };
    match (function.path.get_ident(), call.args.len()) {
        (Some(name), 1) if name == "display" => call.args.first(),
        _ => None,
    }
}

/// The argument a path operand starts from: `op`, `req.customer.id`, `self.tenant`, `pair.0`.
fn root(expr: &Expr) -> Option<Ident> {
    match expr {
        Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => {
            path.path.get_ident().cloned()
        }
        Expr::Field(field) if matches!(field.member, Member::Named(_) | Member::Unnamed(_)) => {
            root(&field.base)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operands(text: &str) -> syn::Result<Vec<Operand>> {
        parse(&LitStr::new(text, proc_macro2::Span::call_site()))
    }

    fn refused(text: &str) -> syn::Error {
        match operands(text) {
            Ok(_) => panic!("`{text}` was accepted"),
            Err(error) => error,
        }
    }

    #[test]
    fn operands_are_paths_rooted_at_arguments_or_literals() {
        let parsed = operands(r#"req.customer.id + "-" + op + self.tenant + pair.0"#).unwrap();
        let roots: Vec<String> = parsed
            .iter()
            .map(|o| o.root().map_or("<literal>".into(), ToString::to_string))
            .collect();
        assert_eq!(roots, ["req", "<literal>", "op", "self", "pair"]);
    }

    #[test]
    fn display_takes_a_path_rooted_at_an_argument() {
        let parsed = operands("display(req.at) + id").unwrap();
        assert!(matches!(&parsed[0], Operand::Display { root, .. } if root == "req"));
        let error = refused("display(now())").to_string();
        assert!(error.contains("`display(req.at)`"), "{error}");
    }

    #[test]
    fn calls_arithmetic_and_other_literals_are_refused_each() {
        let error = refused("req.id() + a * 2 + 42 + ok");
        let messages: Vec<String> = error.into_iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("`req.id()`"), "{messages:?}");
        assert!(messages[1].contains("`a * 2`"), "{messages:?}");
        assert!(messages[2].contains("`42`"), "{messages:?}");
    }

    #[test]
    fn an_unparsable_key_says_how_to_write_one() {
        let error = refused("req +").to_string();
        assert!(error.contains("operands joined by `+`"), "{error}");
    }
}
