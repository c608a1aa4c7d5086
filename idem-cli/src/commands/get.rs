//! `get`: one key's record, and what it answers.

use idem_core::seal::Keyring;
use idem_core::Key;

use super::printer::{printed, Printer};
use crate::connect::Connected;
use crate::failure::Failure;
use crate::outcome::{self, Shown};

/// Prints the record under `key` and its outcome, opened with `keyring` when sealed; with
/// `raw`, only the outcome's bytes. When it can't be read from a DynamoDB table whose
/// attributes are named otherwise, says which `--attribute` is missing.
pub(crate) async fn get(
    connected: &Connected,
    key: &Key,
    raw: bool,
    keyring: Option<&Keyring>,
    out: &dyn Printer,
) -> Result<(), Failure> {
    let inspection = match connected.idem.inspect(key).await {
        Ok(Some(inspection)) => inspection,
        Ok(None) => return Err(Failure::no_record(key)),
        Err(error) => return Err(connected.failure(error).await),
    };
    let scope = connected.idem.store().sealing_scope();
    let shown = outcome::shown(&inspection, keyring, &scope);
    if let Shown::Value { unsealed: true, .. } = shown {
        out.note(
            "note: this outcome is stored unsealed: a service with sealing on refuses it as \
             corrupt, unless its keyring accepts unsealed values",
        );
    }
    if raw {
        return match shown.raw() {
            Some(bytes) => printed(out.bytes(bytes)),
            None => Err(no_value(&shown, &inspection)),
        };
    }
    printed(out.got(&inspection, &shown))?;
    match &shown {
        Shown::Unopened { reason, .. } => Err(unopened(key, reason)),
        _ => Ok(()),
    }
}

/// Why `--raw` writes nothing for `shown`.
fn no_value(shown: &Shown, inspection: &idem_core::Inspection) -> Failure {
    let key = inspection.key();
    match shown {
        Shown::Sealed { .. } => Failure::usage(format!(
            "the outcome under {key} is sealed: pass IDEM_KEYRING or --keyring-file to read it"
        )),
        Shown::Unopened { reason, .. } => unopened(key, reason),
        _ => Failure::refused(format!(
            "the record under {key} has no outcome to write: it is {}",
            inspection.state()
        )),
    }
}

/// The keyring given does not open the outcome under `key`.
fn unopened(key: &Key, reason: &str) -> Failure {
    Failure::failed(format!(
        "the outcome under {key} does not open with the keyring given: {reason}. Pass the \
         service's keyring, with the key it names, in IDEM_KEYRING or --keyring-file"
    ))
}
