//! `scope`: the scope an `Authorization` value, or a principal, puts its keys in, as idem-http
//! computes it.

use std::io::Read;

use idem_protocol::scope::{authorization_scope, effective, ScopeKey, MIN_SCOPE_SECRET_BYTES};

use super::printer::{printed, Printer};
use crate::failure::Failure;

/// What standard input holds: what the service scopes a request by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scoped {
    /// `Authorization` values, one a line: idem-http's default scope.
    Authorization,
    /// One principal, as a scope function (`scope_from_extension`, `scope`) gives it.
    Principal,
}

/// Reads what `scoped` names from standard input and prints its scope, keyed with the secret
/// in the environment variable `secret_env` when there is one.
pub(crate) fn scope(
    scoped: Scoped,
    secret_env: Option<&str>,
    out: &dyn Printer,
) -> Result<(), Failure> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|error| Failure::failed(format!("could not read standard input: {error}")))?;
    let scope = match scoped {
        Scoped::Authorization => digested(&input)?,
        Scoped::Principal => principal(&input)?,
    };
    let scope = match secret_env {
        None => scope,
        Some(variable) => keyed(variable)?.keyed(&scope),
    };
    printed(out.scope(&scope))
}

/// The digest of the `Authorization` values in `input`, one a line.
fn digested(input: &[u8]) -> Result<String, Failure> {
    let values = input
        .split(|&byte| byte == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    authorization_scope(values).ok_or_else(|| {
        Failure::usage(
            "no Authorization value on standard input: `printf '%s' \"$AUTHORIZATION\" | idem scope`",
        )
    })
}

/// The principal in `input`, without the line end `echo` leaves, as the layer takes it: a
/// blank one is no scope at all ([`effective`]).
fn principal(input: &[u8]) -> Result<String, Failure> {
    let input = input.strip_suffix(b"\n").unwrap_or(input);
    let input = input.strip_suffix(b"\r").unwrap_or(input);
    let text = std::str::from_utf8(input).map_err(|_| {
        Failure::usage("the principal on standard input is not UTF-8, which a scope is")
    })?;
    effective(Some(text)).map(str::to_owned).ok_or_else(|| {
        Failure::usage(
            "no principal on standard input (a blank one is no scope: the service keeps such a \
             request's key unscoped): `printf '%s' \"$PRINCIPAL\" | idem scope --principal`",
        )
    })
}

/// The key of the secret in the environment variable `variable`.
fn keyed(variable: &str) -> Result<ScopeKey, Failure> {
    Ok(ScopeKey::new(&secret(variable)?))
}

/// The scope secret in the environment variable `variable`, refused when it is unset or
/// shorter than a scope secret may be.
pub(super) fn secret(variable: &str) -> Result<Vec<u8>, Failure> {
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
    Ok(secret.to_vec())
}
