//! Key expressions: `key = "req.order_id + op + \"-v2\""`, operands joined by `+`.

use syn::{BinOp, Expr, ExprLit, Ident, Lit, LitStr, Member};

/// One operand of a key expression.
pub(crate) enum Operand {
    /// A string literal, used as written.
    Literal(LitStr),
    /// An argument or a field path rooted at one (`op`, `req.customer.id`, `self.tenant`).
    Path { root: Ident, expr: Expr },
}

impl Operand {
    pub(crate) fn root(&self) -> Option<&Ident> {
        match self {
            Operand::Literal(_) => None,
            Operand::Path { root, .. } => Some(root),
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
    match root(&expr) {
        Some(root) => Ok(Operand::Path { root, expr }),
        None => Err(syn::Error::new(
            lit.span(),
            format!(
                "key operand `{}` is not an argument, a field path rooted at an argument \
                 (`req.order_id`, `self.tenant`) or a string literal; compute the value in the \
                 caller and pass it as an argument",
                quote::ToTokens::to_token_stream(&expr)
                    .to_string()
                    .replace(" . ", ".")
                    .replace(" (", "(")
                    .replace(" )", ")")
            ),
        )),
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
