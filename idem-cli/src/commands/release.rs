//! `release`: frees a key held by an in-progress call, once the operator says `--yes`.

use idem_core::store::Record;
use idem_core::{Inspection, Key, RecordState, ReleaseReport};

use super::printer::{printed, Printer};
use crate::connect::Connected;
use crate::failure::Failure;

/// Releases `key` if it is in progress and `yes`; without `yes`, shows what would be released
/// and refuses with a usage failure.
pub(crate) async fn release(
    connected: &Connected,
    key: &Key,
    yes: bool,
    out: &dyn Printer,
) -> Result<(), Failure> {
    let idem = &connected.idem;
    let store_failure = |error| Failure::from_error(error, &connected.store);
    if !yes {
        let held = idem.inspect(key).await.map_err(store_failure)?;
        let held = match held {
            None => return Err(Failure::no_record(key)),
            Some(record) if !record.state().is_in_progress() => {
                printed(out.record(&record))?;
                return Err(not_held(key, &record));
            }
            Some(record) => record,
        };
        printed(out.record(&held))?;
        return Err(Failure::usage(format!(
            "not released: pass --yes to release {key}. The next call with this key runs \
             the function again{}. First check what the held call did ({}): look its \
             effect up, a payment by this key with the provider, say.{}",
            resumes(&held),
            who(&held),
            still_running(&held, out),
        )));
    }
    match idem.release_held(key).await.map_err(store_failure)? {
        ReleaseReport::Released(was) => {
            out.note(&format!(
                "released {key} ({}): the next call with this key runs the function again{}",
                who(&was),
                resumes(&was)
            ));
            printed(out.record(&was))
        }
        ReleaseReport::NotHeld(None) => Err(Failure::no_record(key)),
        ReleaseReport::NotHeld(Some(now)) => {
            printed(out.record(&now))?;
            Err(not_held(key, &now))
        }
        ReleaseReport::Changed(now) => {
            match &now {
                Some(now) => printed(out.record(now))?,
                None => printed(out.no_record())?,
            }
            Err(Failure::refused(format!(
                "not released: {key} changed hands between the read and the release, so \
                 nothing was changed. It is now {}. Check the effect again before releasing",
                match &now {
                    Some(now) => format!("{} ({})", now.state(), who(now)),
                    None => "gone (no record)".to_owned(),
                }
            )))
        }
        other => Err(Failure::failed(format!(
            "the release of {key} ended in a way this idem does not know: {other:?}"
        ))),
    }
}

/// The refusal for a record that is not in progress.
fn not_held(key: &Key, record: &Inspection) -> Failure {
    Failure::refused(format!(
        "not released: {key} is not in progress, it is {}. Only an in-progress record can be \
         released; `idem forget` deletes a finished one (and the next call runs again)",
        record.state()
    ))
}

/// Who holds the record: `owner X, attempt N, steps a, b`.
fn who(inspection: &Inspection) -> String {
    let Record::InProgress(held) = inspection.record() else {
        return inspection.state().to_string();
    };
    let steps: Vec<&str> = held.steps().iter().map(|(name, _)| name).collect();
    let steps = if steps.is_empty() {
        "no steps recorded".to_owned()
    } else {
        format!("steps recorded: {}", steps.join(", "))
    };
    format!(
        "owner {}, attempt {}, {steps}",
        held.owner().as_str(),
        held.attempt()
    )
}

/// ` (resuming after the recorded steps...)` when it has some.
fn resumes(inspection: &Inspection) -> &'static str {
    match inspection.record() {
        Record::InProgress(held) if !held.steps().is_empty() => {
            " (resuming after the recorded steps, whose effects happened)"
        }
        _ => "",
    }
}

/// A warning when the lease is live: the call may still run.
fn still_running(inspection: &Inspection, out: &dyn Printer) -> String {
    match (inspection.state(), inspection.record()) {
        (RecordState::Running, Record::InProgress(held)) => format!(
            " Its lease is live until {}: the call may still be running, and if it is, \
             releasing makes it lose its lease and its outcome is not recorded.",
            out.when(held.lease_until())
        ),
        _ => String::new(),
    }
}
