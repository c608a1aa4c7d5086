//! Evaluates an expression as JMESPath does, noting on the way whether the value it selects
//! lost a part of the event it reads: a key built of parts must have all of them, whatever is
//! done with them after.
//!
//! A part is lost when
//! - a multi-select (`[customer, order_id]`, `{c: customer, o: order_id}`), at any depth, has
//!   one missing: `null`, an empty string, or a list or object of nothing but nulls. Whatever
//!   follows it (a flatten `[]`, a filter `[?@ != null]`, a nested multi-select) cannot
//!   hide it, since the multi-select is judged where it is built;
//! - a projection (`lines[*].sku`) drops an element the path after it found nothing in. An
//!   element a filter (`[?kind == 'item']`) leaves out is not lost: choosing is what a filter
//!   is for;
//! - `to_string` or `type` is given `null`, which they turn into the text `"null"`.
//!
//! The value an event holds as it is (a body selected whole, with nulls of its own) loses
//! nothing. Multi-selects inside an expression reference (`sort_by(lines, &[a, b])`) are
//! evaluated by the function that takes them, and are not judged.

use std::collections::{BTreeMap, BTreeSet};

use jmespath::ast::Ast;
use jmespath::{interpret, Context, ErrorReason, JmespathError, Rcvar, RuntimeError, Variable};

/// The functions that turn `null` into text: `to_string(null)` and `type(null)` are `"null"`.
const NULL_AS_TEXT: [&str; 2] = ["to_string", "type"];

/// The value `node` selects from `data`, and whether it lost a part on the way.
pub(crate) fn search(
    data: &Rcvar,
    node: &Ast,
    ctx: &mut Context<'_>,
) -> Result<(Rcvar, bool), JmespathError> {
    let mut tracker = Tracker { lost: false };
    let found = tracker.evaluate(data, node, ctx)?;
    Ok((found, tracker.lost))
}

/// Whether a part of a multi-select is missing: `null`, an empty string, or a list or object
/// of nothing but nulls.
pub(crate) fn is_missing_part(part: &Variable) -> bool {
    match part {
        Variable::Null => true,
        Variable::String(text) => text.is_empty(),
        Variable::Array(items) => items.iter().all(|item| item.is_null()),
        Variable::Object(fields) => fields.values().all(|field| field.is_null()),
        _ => false,
    }
}

struct Tracker {
    lost: bool,
}

impl Tracker {
    /// `node` over `data`, as [`jmespath::interpret`] evaluates it, for the nodes through
    /// which a key's parts pass; the others (a field, a literal, a comparison) lose nothing of
    /// their own and are left to JMESPath.
    fn evaluate(&mut self, data: &Rcvar, node: &Ast, ctx: &mut Context<'_>) -> SearchResult {
        match node {
            Ast::Subexpr { lhs, rhs, .. } => {
                let left = match &**lhs {
                    // `powertools_json(body).order_id` builds the body's `order_id` alone.
                    Ast::Function { name, args, offset }
                        if name == "powertools_json" && args.len() == 1 =>
                    {
                        self.json_read_by(data, &args[0], *offset, rhs, ctx)?
                    }
                    lhs => self.evaluate(data, lhs, ctx)?,
                };
                self.evaluate(&left, rhs, ctx)
            }
            Ast::Or { lhs, rhs, .. } => {
                let left = self.evaluate(data, lhs, ctx)?;
                if left.is_truthy() {
                    Ok(left)
                } else {
                    self.evaluate(data, rhs, ctx)
                }
            }
            Ast::And { lhs, rhs, .. } => {
                let left = self.evaluate(data, lhs, ctx)?;
                if left.is_truthy() {
                    self.evaluate(data, rhs, ctx)
                } else {
                    Ok(left)
                }
            }
            Ast::Condition {
                predicate, then, ..
            } => {
                if interpret(data, predicate, ctx)?.is_truthy() {
                    self.evaluate(data, then, ctx)
                } else {
                    Ok(null())
                }
            }
            Ast::ObjectValues { node, .. } => match &*self.evaluate(data, node, ctx)? {
                Variable::Object(fields) => Ok(array(fields.values().cloned().collect())),
                _ => Ok(null()),
            },
            Ast::Projection { lhs, rhs, .. } => {
                let left = self.evaluate(data, lhs, ctx)?;
                let Some(elements) = left.as_array() else {
                    return Ok(null());
                };
                let mut collected = Vec::new();
                for element in elements {
                    let current = match &**rhs {
                        // A filter leaves out what it does not choose: nothing is lost.
                        Ast::Condition {
                            predicate, then, ..
                        } => {
                            if !interpret(element, predicate, ctx)?.is_truthy() {
                                continue;
                            }
                            self.evaluate(element, then, ctx)?
                        }
                        rhs => self.evaluate(element, rhs, ctx)?,
                    };
                    if !current.is_null() {
                        collected.push(current);
                    } else if !element.is_null() {
                        self.lost = true;
                    }
                }
                Ok(array(collected))
            }
            Ast::Flatten { node, .. } => {
                let subject = self.evaluate(data, node, ctx)?;
                let Some(elements) = subject.as_array() else {
                    return Ok(null());
                };
                let mut collected = Vec::new();
                for element in elements {
                    match element.as_array() {
                        Some(inner) => collected.extend(inner.iter().cloned()),
                        None => collected.push(element.clone()),
                    }
                }
                Ok(array(collected))
            }
            Ast::MultiList { elements, .. } => {
                if data.is_null() {
                    return Ok(null());
                }
                let mut collected = Vec::with_capacity(elements.len());
                for element in elements {
                    let part = self.evaluate(data, element, ctx)?;
                    self.lost |= is_missing_part(&part);
                    collected.push(part);
                }
                Ok(array(collected))
            }
            Ast::MultiHash { elements, .. } => {
                if data.is_null() {
                    return Ok(null());
                }
                let mut collected = BTreeMap::new();
                for pair in elements {
                    let part = self.evaluate(data, &pair.value, ctx)?;
                    self.lost |= is_missing_part(&part);
                    collected.insert(pair.key.clone(), part);
                }
                Ok(Rcvar::new(Variable::Object(collected)))
            }
            Ast::Function { name, args, offset } => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.evaluate(data, arg, ctx)?);
                }
                if NULL_AS_TEXT.contains(&name.as_str()) && values.iter().any(|v| v.is_null()) {
                    self.lost = true;
                }
                ctx.offset = *offset;
                call(ctx, name, &values)
            }
            _ => interpret(data, node, ctx),
        }
    }

    /// `powertools_json(arg)` over `data`, building only what `reader` reads of it.
    fn json_read_by(
        &mut self,
        data: &Rcvar,
        arg: &Ast,
        offset: usize,
        reader: &Ast,
        ctx: &mut Context<'_>,
    ) -> SearchResult {
        let text = self.evaluate(data, arg, ctx)?;
        ctx.offset = offset;
        match &*text {
            Variable::String(text) => {
                crate::powertools::json_reading(text, fields_read(reader).as_ref(), ctx)
            }
            // `null`, and the type error of anything else, as the function answers them.
            _ => call(ctx, "powertools_json", &[text]),
        }
    }
}

/// Calls the function `name` of the runtime with `args`, as JMESPath calls it.
fn call(ctx: &mut Context<'_>, name: &str, args: &[Rcvar]) -> SearchResult {
    match ctx.runtime.get_function(name) {
        Some(function) => function.evaluate(args, ctx),
        None => {
            let reason = ErrorReason::Runtime(RuntimeError::UnknownFunction(name.to_owned()));
            Err(JmespathError::from_ctx(ctx, reason))
        }
    }
}

/// The fields of the value it is evaluated over that `node` reads, `None` when it may read
/// more than fields (the value whole, an index, a slice): what of a value must be built for
/// `node` to find in it all it would find in the whole.
pub(crate) fn fields_read(node: &Ast) -> Option<BTreeSet<String>> {
    let mut fields = BTreeSet::new();
    collect_fields(node, &mut fields).then_some(fields)
}

/// Adds the fields `node` reads to `fields`; `false` when it reads more than fields.
fn collect_fields(node: &Ast, fields: &mut BTreeSet<String>) -> bool {
    match node {
        Ast::Field { name, .. } => {
            fields.insert(name.clone());
            true
        }
        // What follows applies to what the left side found, not to this value.
        Ast::Subexpr { lhs, .. } | Ast::Projection { lhs, .. } => collect_fields(lhs, fields),
        Ast::Flatten { node, .. } | Ast::ObjectValues { node, .. } | Ast::Not { node, .. } => {
            collect_fields(node, fields)
        }
        Ast::Comparison { lhs, rhs, .. } | Ast::And { lhs, rhs, .. } | Ast::Or { lhs, rhs, .. } => {
            collect_fields(lhs, fields) && collect_fields(rhs, fields)
        }
        Ast::Condition {
            predicate, then, ..
        } => collect_fields(predicate, fields) && collect_fields(then, fields),
        Ast::MultiList { elements, .. } => elements.iter().all(|node| collect_fields(node, fields)),
        Ast::MultiHash { elements, .. } => elements
            .iter()
            .all(|pair| collect_fields(&pair.value, fields)),
        // An expression reference is applied to what a function gives it, not to this value.
        Ast::Function { args, .. } => args
            .iter()
            .filter(|arg| !matches!(arg, Ast::Expref { .. }))
            .all(|arg| collect_fields(arg, fields)),
        Ast::Literal { .. } | Ast::Expref { .. } => true,
        Ast::Identity { .. } | Ast::Index { .. } | Ast::Slice { .. } => false,
    }
}

type SearchResult = Result<Rcvar, JmespathError>;

fn null() -> Rcvar {
    Rcvar::new(Variable::Null)
}

fn array(elements: Vec<Rcvar>) -> Rcvar {
    Rcvar::new(Variable::Array(elements))
}
