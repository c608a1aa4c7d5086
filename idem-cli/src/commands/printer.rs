//! What a command prints, said by what it is (a record, a listing, counts, a note): the
//! commands decide what to show and when, the output layer how it reads (a table or aligned
//! details for people, one JSON document for scripts).

use std::collections::BTreeMap;
use std::io;

use idem_core::store::Timestamp;
use idem_core::{Inspection, Key};

use super::tally::Stats;
use crate::failure::Failure;
use crate::listing::Entry;
use crate::outcome::Shown;

/// Where a command's results (stdout) and notes (stderr) go.
pub(crate) trait Printer {
    /// Whether results are printed as one JSON document.
    fn is_json(&self) -> bool;

    /// One record, as `get`, `forget` and `release` show it.
    fn record(&self, inspection: &Inspection) -> io::Result<()>;

    /// No record where a command shows one (a corrupt one, one gone): `null` in JSON, nothing
    /// otherwise.
    fn no_record(&self) -> io::Result<()>;

    /// One record and its outcome, as `get` shows them.
    fn got(&self, inspection: &Inspection, shown: &Shown) -> io::Result<()>;

    /// An outcome's bytes, as stored: `get --raw`.
    fn bytes(&self, bytes: &[u8]) -> io::Result<()>;

    /// Listed records.
    fn entries(&self, entries: &[Entry]) -> io::Result<()>;

    /// Listed records in `list --json --envelope`'s document: whether more matched than were
    /// listed, and the limit (`None` with `--all`).
    fn envelope(&self, entries: &[Entry], truncated: bool, limit: Option<u64>) -> io::Result<()>;

    /// Counts by function and state.
    fn stats(&self, stats: &Stats) -> io::Result<()>;

    /// The functions that have records, with how many each has.
    fn functions(&self, records: &BTreeMap<String, u64>) -> io::Result<()>;

    /// How many records `purge-expired` deleted.
    fn purged(&self, purged: u64) -> io::Result<()>;

    /// The scope `idem scope` computed.
    fn scope(&self, scope: &str) -> io::Result<()>;

    /// The key `idem key` computed.
    fn key(&self, key: &Key) -> io::Result<()>;

    /// `at` as a message says it: `RFC 3339 (in 3m)`.
    fn when(&self, at: Timestamp) -> String;

    /// `text` on stderr, as a note beside the results.
    fn note(&self, text: &str);
}

/// The result of printing, as a command's: a failed write fails the command, but a closed pipe
/// does not (`idem list | head`: the reader has what it wanted).
pub(crate) fn printed(result: io::Result<()>) -> Result<(), Failure> {
    match result {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(error) => Err(Failure::failed(format!(
            "could not write the output: {error}"
        ))),
    }
}
