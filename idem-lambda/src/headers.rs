//! Header names as HTTP compares them: an expression's `headers."Idempotency-Key"` finds an
//! HTTP event's header whatever case the event spells its name in.
//!
//! API Gateway's REST API passes names as the client sent them, its HTTP API and function URLs
//! lower-case them, and `aws_lambda_events`' typed requests write them lower-cased too: a key
//! expression written one way must find the header in all of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use jmespath::ast::Ast;
use jmespath::{Rcvar, Variable};

/// The objects of an HTTP event that hold headers by name.
const HEADER_OBJECTS: [&str; 2] = ["headers", "multiValueHeaders"];

/// The header names `ast` reads as `headers.<name>` or `multiValueHeaders.<name>`.
pub(crate) fn names_read(ast: &Ast) -> Vec<String> {
    let mut names = Vec::new();
    collect(ast, &mut names);
    names.sort();
    names.dedup();
    names
}

fn collect(ast: &Ast, names: &mut Vec<String>) {
    if let Ast::Subexpr { lhs, rhs, .. } = ast {
        if let (Ast::Field { name: object, .. }, Some(name)) = (&**lhs, first_field(rhs)) {
            if HEADER_OBJECTS.contains(&object.as_str()) {
                names.push(name.to_owned());
            }
        }
    }
    for child in children(ast) {
        collect(child, names);
    }
}

/// The field an expression reads first: `b` of `b`, `b[1]`, `b[*].c`, as JMESPath parses what
/// follows `headers.` in `headers.b[1]`.
fn first_field(ast: &Ast) -> Option<&str> {
    match ast {
        Ast::Field { name, .. } => Some(name),
        Ast::Subexpr { lhs, .. } | Ast::Projection { lhs, .. } | Ast::Flatten { node: lhs, .. } => {
            first_field(lhs)
        }
        _ => None,
    }
}

fn children(ast: &Ast) -> Vec<&Ast> {
    match ast {
        Ast::Comparison { lhs, rhs, .. }
        | Ast::Projection { lhs, rhs, .. }
        | Ast::And { lhs, rhs, .. }
        | Ast::Or { lhs, rhs, .. }
        | Ast::Subexpr { lhs, rhs, .. } => vec![lhs, rhs],
        Ast::Condition {
            predicate, then, ..
        } => vec![predicate, then],
        Ast::Expref { ast: node, .. }
        | Ast::Flatten { node, .. }
        | Ast::Not { node, .. }
        | Ast::ObjectValues { node, .. } => vec![node],
        Ast::Function { args, .. } => args.iter().collect(),
        Ast::MultiList { elements, .. } => elements.iter().collect(),
        Ast::MultiHash { elements, .. } => elements.iter().map(|pair| &pair.value).collect(),
        Ast::Identity { .. }
        | Ast::Field { .. }
        | Ast::Index { .. }
        | Ast::Literal { .. }
        | Ast::Slice { .. } => Vec::new(),
    }
}

/// Gives the header objects of `event` each name of `names` it holds under another case, so
/// that the expression finds it. A name the event holds as it is written is left alone; one it
/// holds under several spellings with different values is refused, since either could be the
/// one a proxy or the application reads.
pub(crate) fn match_names(event: &mut Rcvar, names: &[String]) -> Result<(), String> {
    let Variable::Object(fields) = Arc::make_mut(event) else {
        return Ok(());
    };
    for object in HEADER_OBJECTS {
        let Some(headers) = fields.get_mut(object) else {
            continue;
        };
        let Variable::Object(headers) = Arc::make_mut(headers) else {
            continue;
        };
        for name in names {
            if let Some(value) = spelled_otherwise(headers, name, object)? {
                headers.insert(name.clone(), value);
            }
        }
    }
    Ok(())
}

/// The value of the header `name` when `headers` holds it only under another case.
fn spelled_otherwise(
    headers: &BTreeMap<String, Rcvar>,
    name: &str,
    object: &str,
) -> Result<Option<Rcvar>, String> {
    if headers.contains_key(name) {
        return Ok(None);
    }
    let mut found: Option<(&String, &Rcvar)> = None;
    for (spelling, value) in headers {
        if !spelling.eq_ignore_ascii_case(name) {
            continue;
        }
        match found {
            Some((first, earlier)) if earlier != value => {
                return Err(format!(
                    "the event's {object} hold the header `{name}` as `{first}` and as \
                     `{spelling}`, with different values"
                ));
            }
            Some(_) => {}
            None => found = Some((spelling, value)),
        }
    }
    Ok(found.map(|(_, value)| value.clone()))
}
