//! `forget`: deletes one key's record, whatever it holds.

use idem_core::store::Record;
use idem_core::{Inspection, Key};

use super::printed;
use crate::connect::Connected;
use crate::failure::Failure;
use crate::output::{note, Output};

/// Deletes the record under `key`, whatever its state, and prints what it was. A corrupt
/// record is deleted too (it can't be shown).
pub(crate) async fn forget(connected: &Connected, key: &Key, out: &Output) -> Result<(), Failure> {
    let idem = &connected.idem;
    let before = match idem.inspect(key).await {
        Ok(Some(inspection)) => Some(inspection),
        Ok(None) => return Err(Failure::no_record(key)),
        Err(idem_core::Error::CorruptRecord { reason, .. }) => {
            note(&format!(
                "the record under {key} is corrupt ({reason}): deleting it"
            ));
            None
        }
        Err(error) => return Err(Failure::from_error(error, &connected.store)),
    };
    idem.forget(key)
        .await
        .map_err(|error| Failure::from_error(error, &connected.store))?;
    if let Some(before) = &before {
        if before.state().is_in_progress() {
            note(&format!(
                "{key} was {} (owner {}): if that call is still running, its outcome will not \
                 be recorded. `idem release` is the fenced way to free a held key",
                before.state(),
                owner(before)
            ));
        }
    }
    if out.is_json() {
        return match &before {
            Some(before) => printed(out.record(before)),
            None => printed(out.text("null\n")),
        };
    }
    note(&format!(
        "forgot {key}: the next call with this key runs the function again"
    ));
    match &before {
        Some(before) => printed(out.record(before)),
        None => Ok(()),
    }
}

/// The owner token of an in-progress record, or `-`.
fn owner(inspection: &Inspection) -> &str {
    match inspection.record() {
        Record::InProgress(held) => held.owner().as_str(),
        _ => "-",
    }
}
