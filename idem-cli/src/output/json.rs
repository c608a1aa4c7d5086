//! The JSON document of a record; its field names are a contract (see the crate docs).

use std::borrow::Cow;

use idem_core::store::{Outcome, Record};
use idem_core::Inspection;
use serde::Serialize;

use super::time::rfc3339;
use crate::listing::Entry;

/// A record as `--json` prints it. Every field is always present (`null` where it does not
/// apply).
#[derive(Debug, Serialize)]
pub(crate) struct RecordDoc<'a> {
    key: Cow<'a, str>,
    function: Option<&'a str>,
    scope: Option<&'a str>,
    state: &'static str,
    owner: Option<&'a str>,
    attempt: Option<u32>,
    fencing_token: Option<u64>,
    lease_until: Option<String>,
    expires_at: Option<String>,
    steps: Vec<&'a str>,
    stored_bytes: Option<usize>,
    outcome: Option<&'static str>,
    fingerprint: Option<String>,
    error: Option<&'a str>,
}

impl<'a> RecordDoc<'a> {
    /// The document of a listed entry.
    pub(crate) fn of(entry: &'a Entry) -> Self {
        match entry {
            Entry::Record(inspection) => Self::inspected(inspection),
            Entry::Unreadable { reason, .. } | Entry::Unkeyed { reason, .. } => RecordDoc {
                key: entry.key_text(),
                function: entry.function(),
                scope: entry.key().and_then(|key| key.scope()),
                state: entry.state(),
                owner: None,
                attempt: None,
                fencing_token: None,
                lease_until: None,
                expires_at: None,
                steps: Vec::new(),
                stored_bytes: None,
                outcome: None,
                fingerprint: None,
                error: Some(reason),
            },
        }
    }

    /// The document of a record read with `get`.
    pub(crate) fn inspected(inspection: &'a Inspection) -> Self {
        let key = inspection.key();
        let mut doc = RecordDoc {
            key: Cow::Borrowed(key.as_str()),
            function: key.function(),
            scope: key.scope(),
            state: inspection.state().as_str(),
            owner: None,
            attempt: None,
            fencing_token: None,
            lease_until: None,
            expires_at: None,
            steps: Vec::new(),
            stored_bytes: Some(inspection.stored_bytes()),
            outcome: None,
            fingerprint: Some(inspection.record().fingerprint().to_hex()),
            error: None,
        };
        match inspection.record() {
            Record::InProgress(held) => {
                doc.owner = Some(held.owner().as_str());
                doc.attempt = Some(held.attempt());
                doc.fencing_token = Some(held.fencing_token());
                doc.lease_until = Some(rfc3339(held.lease_until()));
                doc.steps = held.steps().iter().map(|(name, _)| name).collect();
            }
            Record::Completed(completed) => {
                doc.expires_at = Some(rfc3339(completed.expires_at()));
                doc.outcome = Some(outcome_name(completed.outcome()));
            }
            // A kind of record this idem does not know: the fields above say what is known.
            _ => {}
        }
        doc
    }
}

/// What `list --json --envelope` prints: the records, and whether more matched.
#[derive(Debug, Serialize)]
pub(crate) struct Envelope<'a> {
    /// The records listed, as `list --json` prints them.
    pub(crate) records: Vec<RecordDoc<'a>>,
    /// Whether more records matched than were listed (the limit was reached).
    pub(crate) truncated: bool,
    /// The limit the listing stopped at; `None` (`null`) with `--all`.
    pub(crate) limit: Option<u64>,
}

/// One function, as `functions --json` prints it.
#[derive(Debug, Serialize)]
pub(crate) struct Function<'a> {
    /// Its name, as keys spell it and `--function` takes it.
    pub(crate) function: &'a str,
    /// How many records it has (corrupt ones included).
    pub(crate) records: u64,
}

/// What `purge-expired --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct Purged {
    /// How many records were deleted.
    pub(crate) purged: u64,
}

/// `ok`, `err` or `aborted`.
pub(crate) fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Ok(_) => "ok",
        Outcome::Err(_) => "err",
        Outcome::Aborted => "aborted",
        _ => "unknown",
    }
}
