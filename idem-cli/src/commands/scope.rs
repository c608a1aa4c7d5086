//! `scope`: the scope an `Authorization` value puts its keys in, as idem-http computes it.

use std::io::Read;

use idem_protocol::scope::{authorization_scope, ScopeKey, MIN_SCOPE_SECRET_BYTES};

use super::printed;
use crate::failure::Failure;
use crate::output::Output;

/// Reads `Authorization` values from standard input, one a line, and prints their scope,
/// keyed with the secret in the environment variable `secret_env` when there is one.
pub(crate) fn scope(secret_env: Option<&str>, out: &Output) -> Result<(), Failure> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|error| Failure::failed(format!("could not read standard input: {error}")))?;
    let values = input
        .split(|&byte| byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let Some(scope) = authorization_scope(values) else {
        return Err(Failure::usage(
            "no Authorization value on standard input: `printf '%s' \"$AUTHORIZATION\" | idem scope`",
        ));
    };
    let scope = match secret_env {
        None => scope,
        Some(variable) => keyed(variable)?.keyed(&scope),
    };
    if out.is_json() {
        return printed(out.document(&serde_json::json!({ "scope": scope })));
    }
    printed(out.text(&format!("{scope}\n")))
}

/// The key of the secret in the environment variable `variable`.
fn keyed(variable: &str) -> Result<ScopeKey, Failure> {
    let secret = std::env::var_os(variable)
        .ok_or_else(|| Failure::usage(format!("the environment variable {variable} is not set")))?;
    let secret = secret.as_encoded_bytes();
    if secret.len() < MIN_SCOPE_SECRET_BYTES {
        return Err(Failure::usage(format!(
            "the secret in {variable} is {} bytes long; a scope secret is at least \
             {MIN_SCOPE_SECRET_BYTES}",
            secret.len()
        )));
    }
    Ok(ScopeKey::new(secret))
}
