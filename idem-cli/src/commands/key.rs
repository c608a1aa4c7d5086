//! `key`: the key a service stores a record under, computed by the service's own rule, so
//! that an operator can go from an order id (an event) to its record.

use std::io::Read;

use idem_core::Idempotency;
use idem_lambda::{IdempotentHandler, Unscoped};
use idem_stores::memory::MemoryStore;
use serde_json::Value;

use super::printer::{printed, Printer};
use crate::failure::Failure;
use crate::key_args::{KeyOf, LambdaKeyArgs};

/// Prints the key `of` describes, in `namespace`.
pub(crate) fn key(of: &KeyOf, namespace: &str, out: &dyn Printer) -> Result<(), Failure> {
    let key = match of {
        KeyOf::Lambda(args) => lambda_key(args, namespace, &event()?)?,
    };
    printed(out.key(&key))
}

/// The event on standard input, as JSON.
fn event() -> Result<Value, Failure> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|error| Failure::failed(format!("could not read standard input: {error}")))?;
    serde_json::from_slice(&input).map_err(|error| {
        Failure::usage(format!(
            "standard input is not a JSON event ({error}): `idem key lambda ... < event.json`"
        ))
    })
}

/// The key the handler `args` describes stores `event` under: idem-lambda's own.
fn lambda_key(
    args: &LambdaKeyArgs,
    namespace: &str,
    event: &Value,
) -> Result<idem_core::Key, Failure> {
    // A key needs no store: the handle only names the namespace.
    let idem = Idempotency::new(MemoryStore::new()).with_namespace(namespace);
    let mut builder = IdempotentHandler::builder(idem)
        .name(args.name.as_str())
        .event_key(&args.expression);
    if let Some(variable) = &args.secret_env {
        builder = builder.scope_secret(super::scope::secret(variable)?);
    }
    if let Some(principal) = args.principal.clone() {
        builder = builder.principal(move |_, _| Some(principal.clone()));
    }
    if args.unscoped_shared {
        builder = builder.unscoped(Unscoped::Shared);
    }
    if args.allow_partial_keys {
        builder = builder.allow_partial_keys();
    }
    builder
        .stored_key(event, &lambda_runtime::Context::default())
        .map_err(|error| Failure::usage(format!("the handler would store no key: {error}")))
}
