//! The JMESPath functions Powertools adds, so that its expressions work as written:
//! `powertools_json`, `powertools_base64` and `powertools_base64_gzip`.

use std::io::Read;
use std::sync::Arc;

use base64::Engine;
use jmespath::functions::{ArgumentType, CustomFunction, Signature};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, Variable};

/// The most `powertools_base64_gzip` inflates: far above a CloudWatch Logs delivery (about
/// 1 MB decompressed), far below what a Lambda function's memory holds.
pub const MAX_GZIP_INFLATED_BYTES: usize = 64 * 1024 * 1024;

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
    Variable::from_json(text).map(Arc::new).map_err(|error| {
        let why = format!("the text it reads is not JSON ({error})");
        failed(ctx, "powertools_json", &why)
    })
}

/// `powertools_base64(text)`: the UTF-8 text that `text` encodes in standard base64.
fn base64_text(args: &[Rcvar], ctx: &mut Context<'_>) -> Result<Rcvar, JmespathError> {
    let Some(text) = string_argument(args) else {
        return Ok(args[0].clone());
    };
    let bytes = decode_base64(text, ctx, "powertools_base64")?;
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
    let mut bytes = Vec::new();
    // A few megabytes of event can hold gigabytes of zeros: decode no more than the bound.
    flate2::read::GzDecoder::new(compressed.as_slice())
        .take(MAX_GZIP_INFLATED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| {
            failed(
                ctx,
                name,
                &format!("the data it reads is not gzip ({error})"),
            )
        })?;
    if bytes.len() > MAX_GZIP_INFLATED_BYTES {
        let why = format!("decompresses to more than {MAX_GZIP_INFLATED_BYTES} bytes");
        return Err(failed(ctx, name, &why));
    }
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
