//! What `idem` prints: tables and aligned details for people, one JSON document for scripts.
//! Results go to stdout; notes and errors to stderr. [`Output`] is the [`Printer`] the
//! commands say what they found to.

mod json;
mod outcome;
mod raw;
mod table;
mod time;

use std::collections::BTreeMap;
use std::io::{self, IsTerminal, Write};

use idem_core::store::Record;
use idem_core::{store::Timestamp, Clock, Inspection, Key, SystemClock};
use serde::Serialize;

use self::json::{outcome_name, Envelope, Function, Purged, RecordDoc};
use self::table::{details, Align, Table};
use self::time::{relative, rfc3339};
use crate::commands::printer::Printer;
use crate::commands::tally::Stats;
use crate::listing::Entry;
use crate::outcome::Shown;
use crate::visible::{visible, visible_bytes, visible_message};

/// Where results go, and in which form.
#[derive(Debug)]
pub(crate) struct Output {
    json: bool,
    now: Timestamp,
}

impl Output {
    /// Tables, or JSON when `json`.
    pub(crate) fn new(json: bool) -> Self {
        Output {
            json,
            now: SystemClock.now(),
        }
    }

    /// `doc` as one JSON document, indented, with every character a terminal would obey
    /// written as its `\uXXXX` escape: JSON escapes the C0 controls itself, not DEL, C1 or
    /// the bidirectional overrides, and such a character can only be inside a string.
    fn document<T: Serialize + ?Sized>(&self, doc: &T) -> io::Result<()> {
        let text = serde_json::to_string_pretty(doc).map_err(io::Error::other)?;
        let mut text = outcome::visible_json(&text);
        text.push('\n');
        self.text(&text)
    }

    /// `text` as it is, on stdout.
    fn text(&self, text: &str) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    /// `at` as `RFC 3339 (in 3m)`; `-` for the epoch, which a released record's lease is.
    fn at(&self, at: Timestamp) -> String {
        if at == Timestamp::EPOCH {
            return "-".to_owned();
        }
        format!("{} ({})", rfc3339(at), relative(at, self.now))
    }

    fn record_details(&self, inspection: &Inspection) -> Vec<(&'static str, String)> {
        let key = inspection.key();
        let mut pairs = vec![
            ("key", key.to_string()),
            ("function", function_name(key.function())),
        ];
        if let Some(scope) = key.scope() {
            pairs.push(("scope", scope.to_owned()));
        }
        pairs.push(("state", inspection.state().to_string()));
        match inspection.record() {
            Record::InProgress(held) => {
                let steps: Vec<&str> = held.steps().iter().map(|(name, _)| name).collect();
                pairs.extend([
                    ("owner", held.owner().as_str().to_owned()),
                    ("attempt", held.attempt().to_string()),
                    ("fencing token", held.fencing_token().to_string()),
                    ("lease until", self.at(held.lease_until())),
                    (
                        "steps",
                        if steps.is_empty() {
                            "-".into()
                        } else {
                            steps.join(", ")
                        },
                    ),
                ]);
            }
            Record::Completed(completed) => pairs.extend([
                ("outcome", outcome_name(completed.outcome()).to_owned()),
                ("expires at", self.at(completed.expires_at())),
            ]),
            _ => {}
        }
        pairs.extend([
            ("stored bytes", inspection.stored_bytes().to_string()),
            ("fingerprint", inspection.record().fingerprint().to_hex()),
        ]);
        pairs
    }

    fn entry_row(&self, entry: &Entry) -> Vec<String> {
        let (attempt, fencing, until, bytes) = match entry {
            Entry::Record(inspection) => {
                let bytes = inspection.stored_bytes().to_string();
                match inspection.record() {
                    Record::InProgress(held) => (
                        held.attempt().to_string(),
                        held.fencing_token().to_string(),
                        self.at(held.lease_until()),
                        bytes,
                    ),
                    Record::Completed(completed) => (
                        "-".into(),
                        "-".into(),
                        self.at(completed.expires_at()),
                        bytes,
                    ),
                    _ => ("-".into(), "-".into(), "-".into(), bytes),
                }
            }
            Entry::Unreadable { reason, .. } | Entry::Unkeyed { reason, .. } => (
                "-".into(),
                "-".into(),
                format!("unreadable: {reason}"),
                "-".into(),
            ),
        };
        // A key that is none is escaped already (its bytes that are no UTF-8 can't be text).
        let key = match entry {
            Entry::Unkeyed { key, .. } => visible_bytes(key),
            _ => visible(&entry.key_text()).into_owned(),
        };
        let mut row = vec![key];
        row.extend(
            [
                function_name(entry.function()),
                entry.state().to_owned(),
                attempt,
                fencing,
                until,
                bytes,
            ]
            .iter()
            .map(|cell| visible(cell).into_owned()),
        );
        row
    }
}

impl Printer for Output {
    fn is_json(&self) -> bool {
        self.json
    }

    fn record(&self, inspection: &Inspection) -> io::Result<()> {
        if self.json {
            return self.document(&RecordDoc::inspected(inspection));
        }
        self.text(&details(&self.record_details(inspection)))
    }

    fn no_record(&self) -> io::Result<()> {
        match self.json {
            true => self.text("null\n"),
            false => Ok(()),
        }
    }

    /// The details, then the outcome decoded; in JSON, the record's document with
    /// `outcome_format` and `outcome_value`.
    fn got(&self, inspection: &Inspection, shown: &Shown) -> io::Result<()> {
        if self.json {
            return self.document(&GotDoc {
                record: RecordDoc::inspected(inspection),
                outcome: outcome::OutcomeDoc::of(shown),
            });
        }
        let mut text = details(&self.record_details(inspection));
        text.push_str(&outcome::text(shown, inspection.key()));
        self.text(&text)
    }

    /// On a terminal, what it would obey is written escaped instead, with a note on stderr
    /// ([`raw::raw_output`]).
    fn bytes(&self, bytes: &[u8]) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        let terminal = stdout.is_terminal();
        let written = raw::raw_output(bytes, terminal);
        if let Some(text) = raw::escaped_note(bytes, &written, terminal) {
            self.note(text);
        }
        stdout.write_all(&written)?;
        stdout.flush()
    }

    /// A table, or a JSON array.
    fn entries(&self, entries: &[Entry]) -> io::Result<()> {
        if self.json {
            let docs: Vec<RecordDoc<'_>> = entries.iter().map(RecordDoc::of).collect();
            return self.document(&docs);
        }
        if entries.is_empty() {
            return Ok(());
        }
        let mut table = Table::new(&[
            ("KEY", Align::Left),
            ("FUNCTION", Align::Left),
            ("STATE", Align::Left),
            ("ATTEMPT", Align::Right),
            ("FENCING TOKEN", Align::Right),
            ("LEASE/EXPIRY", Align::Left),
            ("BYTES", Align::Right),
        ]);
        for entry in entries {
            table.row_shown(self.entry_row(entry));
        }
        self.text(&table.render())
    }

    fn envelope(&self, entries: &[Entry], truncated: bool, limit: Option<u64>) -> io::Result<()> {
        self.document(&Envelope {
            records: entries.iter().map(RecordDoc::of).collect(),
            truncated,
            limit,
        })
    }

    fn stats(&self, stats: &Stats) -> io::Result<()> {
        if self.json {
            return self.document(stats);
        }
        let mut table = Table::new(&[
            ("FUNCTION", Align::Left),
            ("STATE", Align::Left),
            ("RECORDS", Align::Right),
        ]);
        for function in &stats.functions {
            for (state, count) in &function.by_state {
                table.row(vec![
                    function_name(function.function.as_deref()),
                    state.clone(),
                    count.to_string(),
                ]);
            }
        }
        table.row(vec!["total".into(), String::new(), stats.total.to_string()]);
        self.text(&table.render())
    }

    /// One name a line, or `[{"function": F, "records": N}]`.
    fn functions(&self, records: &BTreeMap<String, u64>) -> io::Result<()> {
        if self.json {
            let functions: Vec<Function<'_>> = records
                .iter()
                .map(|(function, records)| Function {
                    function,
                    records: *records,
                })
                .collect();
            return self.document(&functions);
        }
        // Each name escaped on its own line: a name can't break the listing into two.
        let names: String = records
            .keys()
            .map(|name| format!("{}\n", visible(name)))
            .collect();
        self.text(&names)
    }

    fn purged(&self, purged: u64) -> io::Result<()> {
        if self.json {
            return self.document(&Purged { purged });
        }
        let records = if purged == 1 { "record" } else { "records" };
        self.text(&format!("purged {purged} expired {records}\n"))
    }

    fn scope(&self, scope: &str) -> io::Result<()> {
        if self.json {
            return self.document(&serde_json::json!({ "scope": scope }));
        }
        self.text(&format!("{scope}\n"))
    }

    fn key(&self, key: &Key) -> io::Result<()> {
        if self.json {
            return self.document(&serde_json::json!({ "key": key.as_str() }));
        }
        self.text(&format!("{key}\n"))
    }

    fn when(&self, at: Timestamp) -> String {
        self.at(at)
    }

    /// With what a terminal would obey escaped.
    fn note(&self, text: &str) {
        eprintln!("{}", visible_message(text));
    }
}

/// `get --json`: the record's document, and its outcome's two fields.
#[derive(Debug, Serialize)]
struct GotDoc<'a> {
    #[serde(flatten)]
    record: RecordDoc<'a>,
    #[serde(flatten)]
    outcome: outcome::OutcomeDoc<'a>,
}

/// A function's name as printed: `(digest)` for a key stored as its digest.
fn function_name(function: Option<&str>) -> String {
    function.unwrap_or("(digest)").to_owned()
}
