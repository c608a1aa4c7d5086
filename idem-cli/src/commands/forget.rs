//! `forget`: deletes one key's record, once the operator says `--yes` (and `--running`, for a
//! key a call holds).

use idem_core::store::Record;
use idem_core::{Inspection, Key};

use super::printer::{printed, Printer};
use crate::connect::Connected;
use crate::failure::{shell_quoted, Failure};

/// What the operator agreed to on the command line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Consent {
    /// `--yes`: delete the record.
    pub(crate) yes: bool,
    /// `--running`: delete it even if a call holds the key.
    pub(crate) running: bool,
}

/// Deletes the record under `key` with the operator's consent, and prints what it was. Shows
/// the record and refuses without `--yes` (a usage failure), and for a key held by a call
/// without `--running` (refused). Deletes only the record it read: one that changed meanwhile
/// is left, and the command refused. A corrupt record is deleted too (it can't be shown).
pub(crate) async fn forget(
    connected: &Connected,
    key: &Key,
    consent: Consent,
    out: &dyn Printer,
) -> Result<(), Failure> {
    let idem = &connected.idem;
    let before = match idem.inspect(key).await {
        Ok(Some(inspection)) => Some(inspection),
        Ok(None) => return Err(Failure::no_record(key)),
        Err(idem_core::Error::CorruptRecord { reason, .. }) => {
            out.note(&format!("the record under {key} is corrupt ({reason})"));
            None
        }
        Err(error) => return Err(Failure::from_error(error, &connected.store)),
    };
    let held = before
        .as_ref()
        .filter(|before| before.state().is_in_progress());
    if !consent.yes {
        show(&before, out)?;
        return Err(Failure::usage(format!(
            "not forgotten: this would delete the record under {key}{}, and the next call \
             with this key would run the function again. To do it: idem forget {} --yes{}",
            match held {
                Some(held) => format!(
                    ", which a call holds ({}): if it is still running, its outcome will not \
                     be recorded, and the steps it recorded are forgotten",
                    who(held)
                ),
                None => String::new(),
            },
            shell_quoted(key.as_str()),
            if held.is_some() { " --running" } else { "" },
        )));
    }
    if let (Some(held), false) = (held, consent.running) {
        show(&before, out)?;
        return Err(Failure::refused(format!(
            "not forgotten: {key} is {} ({}): a call holds it, and if it is still running, \
             deleting its record loses its outcome and forgets the steps it recorded. \
             `idem release {} --yes` is the fenced way to free a held key; to delete it \
             anyway, add --running",
            held.state(),
            who(held),
            shell_quoted(key.as_str()),
        )));
    }
    // The record read, and no other: a key reserved, taken over or completed since is left
    // as it is. A corrupt record, which can't be read, is deleted whatever it is.
    let forgotten = match &before {
        Some(read) => idem.forget_unchanged(key, read).await,
        None => idem.forget(key).await.map(|()| true),
    }
    .map_err(|error| Failure::from_error(error, &connected.store))?;
    if !forgotten {
        return Err(Failure::refused(format!(
            "not forgotten: the record under {key} changed after it was read (a call \
             reserved, took over or completed the key), so nothing was deleted. See it with \
             `idem get {}`, and forget it again if you still mean to",
            shell_quoted(key.as_str()),
        )));
    }
    if let Some(held) = held {
        out.note(&format!(
            "{key} was {} ({}): if that call is still running, its outcome will not be \
             recorded",
            held.state(),
            who(held)
        ));
    }
    if out.is_json() {
        return show(&before, out);
    }
    out.note(&format!(
        "forgot {key}: the next call with this key runs the function again"
    ));
    match &before {
        Some(before) => printed(out.record(before)),
        None => Ok(()),
    }
}

/// Prints the record as it was read (`null` in JSON for a corrupt one, nothing otherwise).
fn show(before: &Option<Inspection>, out: &dyn Printer) -> Result<(), Failure> {
    match before {
        Some(before) => printed(out.record(before)),
        None => printed(out.no_record()),
    }
}

/// Who holds an in-progress record: `owner X, attempt N`.
fn who(inspection: &Inspection) -> String {
    match inspection.record() {
        Record::InProgress(held) => {
            format!(
                "owner {}, attempt {}",
                held.owner().as_str(),
                held.attempt()
            )
        }
        _ => inspection.state().to_string(),
    }
}
