//! The JMESPath functions Powertools adds, so that its expressions work as written:
//! `powertools_json`, `powertools_base64` and `powertools_base64_gzip`, and the memory they
//! may take.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::Read;
use std::sync::Arc;

use base64::Engine;
use jmespath::functions::{ArgumentType, CustomFunction, Signature};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, Variable};

/// The most `powertools_base64_gzip` inflates: 8 MiB, far above a CloudWatch Logs delivery
/// (about 1 MB decompressed), far below what a Lambda function's memory holds. Data that
/// inflates to more is refused, and nothing runs.
pub const MAX_GZIP_INFLATED_BYTES: usize = 8 * 1024 * 1024;

/// The most memory Powertools' functions may take in one evaluation of an expression: 32 MiB
/// for the text `powertools_base64` and `powertools_base64_gzip` decode and the values
/// `powertools_json` builds, together, counted as they are held in memory. An event that
/// needs more is refused ([`ExpressionError`](crate::ExpressionError), `IdempotencyKeyError`),
/// and nothing runs.
///
/// A JSON value takes from 2 to some 40 times its text in memory (`[[0],[0],…]` the most),
/// but `powertools_json` builds only the fields the expression reads of it:
/// `powertools_json(body).order_id` and `powertools_json(body).[customer, order_id]` build
/// those fields and skip the rest of the body, whatever its size;
/// `powertools_json(body).lines[0]` builds `lines` whole, and `powertools_json(body)` all of
/// the body. Measured with a counting
/// allocator, a 1 MiB JSON body (`{"order_id": …, "lines": [0,0,…]}`) raises the memory an
/// event takes by 1 MiB when its `order_id` is read (the body's text, copied once),
/// and by 21 MiB when it is read whole; a gzip bomb of 84 KiB that would inflate to 63 MiB
/// is refused after 12 MiB.
pub const MAX_DECODED_BYTES: usize = 32 * 1024 * 1024;

thread_local! {
    /// The bytes the evaluation under way on this thread may still take, when one is.
    static LEFT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `evaluation` with a budget of [`MAX_DECODED_BYTES`] for the functions it calls.
pub(crate) fn within_budget<R>(evaluation: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            LEFT.with(|left| left.set(self.0));
        }
    }
    let _restore = Restore(LEFT.with(|left| left.replace(Some(MAX_DECODED_BYTES))));
    evaluation()
}

/// Takes `bytes` from the evaluation's budget, or says it is spent.
fn take(bytes: usize, ctx: &Context<'_>, name: &str) -> Result<(), JmespathError> {
    LEFT.with(|left| {
        let rest = left
            .get()
            .unwrap_or(MAX_DECODED_BYTES)
            .checked_sub(bytes)
            .ok_or_else(|| over_budget(ctx, name))?;
        if left.get().is_some() {
            left.set(Some(rest));
        }
        Ok(())
    })
}

fn over_budget(ctx: &Context<'_>, name: &str) -> JmespathError {
    let why = format!(
        "what it decodes would take more than {MAX_DECODED_BYTES} bytes of memory \
         (MAX_DECODED_BYTES)"
    );
    failed(ctx, name, &why)
}

/// `powertools_json(text)` as the expression `.` `fields` would read it: with `fields`, the
/// document's other fields are left out (see [`crate::build`]).
pub(crate) fn json_reading(
    text: &str,
    fields: Option<&BTreeSet<String>>,
    ctx: &mut Context<'_>,
) -> Result<Rcvar, JmespathError> {
    let name = "powertools_json";
    let left = LEFT.with(|left| Cell::new(left.get().unwrap_or(MAX_DECODED_BYTES)));
    let built = crate::build::build(text, fields, &left);
    LEFT.with(|budget| {
        if budget.get().is_some() {
            budget.set(Some(left.get()));
        }
    });
    built.map_err(|unbuilt| match unbuilt {
        crate::build::Unbuilt::OverBudget => over_budget(ctx, name),
        crate::build::Unbuilt::NotJson(error) => failed(
            ctx,
            name,
            &format!("the text it reads is not JSON ({error})"),
        ),
    })
}

/// Adds the three functions to `runtime`.
pub(crate) fn register(runtime: &mut Runtime) {
    // `null` in, `null` out: an event without the field has no key, rather than a broken one.
    let one_string = || {
        let text_or_null = ArgumentType::Union(vec![ArgumentType::String, ArgumentType::Null]);
        Signature::new(vec![text_or_null], None)
    };
    runtime.register_function(
        "powertools_json",
        Box::new(CustomFunction::new(one_string(), Box::new(json))),
    );
    runtime.register_function(
        "powertools_base64",
        Box::new(CustomFunction::new(one_string(), Box::new(base64_text))),
    );
    runtime.register_function(
        "powertools_base64_gzip",
        Box::new(CustomFunction::new(
            one_string(),
            Box::new(base64_gzip_text),
        )),
    );
}

/// `powertools_json(text)`: the JSON document `text` holds, as API Gateway's and SQS's string
/// bodies do.
fn json(args: &[Rcvar], ctx: &mut Context<'_>) -> Result<Rcvar, JmespathError> {
    let Some(text) = string_argument(args) else {
        return Ok(args[0].clone());
    };
    json_reading(text, None, ctx)
}

/// `powertools_base64(text)`: the UTF-8 text that `text` encodes in standard base64.
fn base64_text(args: &[Rcvar], ctx: &mut Context<'_>) -> Result<Rcvar, JmespathError> {
    let Some(text) = string_argument(args) else {
        return Ok(args[0].clone());
    };
    let bytes = decode_base64(text, ctx, "powertools_base64")?;
    take(bytes.len(), ctx, "powertools_base64")?;
    utf8(bytes, ctx, "powertools_base64")
}

/// `powertools_base64_gzip(text)`: the UTF-8 text that `text` encodes, gzip-compressed, in
/// standard base64, as CloudWatch Logs subscriptions deliver it.
fn base64_gzip_text(args: &[Rcvar], ctx: &mut Context<'_>) -> Result<Rcvar, JmespathError> {
    let name = "powertools_base64_gzip";
    let Some(text) = string_argument(args) else {
        return Ok(args[0].clone());
    };
    let compressed = decode_base64(text, ctx, name)?;
    let mut inflating = flate2::read::GzDecoder::new(compressed.as_slice());
    let mut bytes = Vec::new();
    let mut chunk = vec![0; 64 * 1024];
    // A few megabytes of event can hold gigabytes of zeros: inflate no more than the bound,
    // a chunk at a time, each taken from the budget before it is kept.
    loop {
        let read = inflating.read(&mut chunk).map_err(|error| {
            failed(
                ctx,
                name,
                &format!("the data it reads is not gzip ({error})"),
            )
        })?;
        if read == 0 {
            break;
        }
        if bytes.len() + read > MAX_GZIP_INFLATED_BYTES {
            let why = format!(
                "decompresses to more than {MAX_GZIP_INFLATED_BYTES} bytes \
                 (MAX_GZIP_INFLATED_BYTES)"
            );
            return Err(failed(ctx, name, &why));
        }
        // Taken as the list will hold it: doubled as it grows.
        take(2 * read, ctx, name)?;
        bytes.extend_from_slice(&chunk[..read]);
    }
    drop(chunk);
    utf8(bytes, ctx, name)
}

/// The one argument's text, or `None` for `null` (the signature allows nothing else).
fn string_argument(args: &[Rcvar]) -> Option<&str> {
    args[0].as_string().map(String::as_str)
}

fn decode_base64(text: &str, ctx: &Context<'_>, name: &str) -> Result<Vec<u8>, JmespathError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| {
            failed(
                ctx,
                name,
                &format!("the text it reads is not base64 ({error})"),
            )
        })
}

fn utf8(bytes: Vec<u8>, ctx: &Context<'_>, name: &str) -> Result<Rcvar, JmespathError> {
    String::from_utf8(bytes)
        .map(|text| Arc::new(Variable::String(text)))
        .map_err(|_| failed(ctx, name, "the decoded bytes are not UTF-8 text"))
}

fn failed(ctx: &Context<'_>, name: &str, why: &str) -> JmespathError {
    JmespathError::from_ctx(ctx, ErrorReason::Parse(format!("{name}: {why}")))
}
