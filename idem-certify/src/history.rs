//! The history: what each worker did and saw, one JSON event per line, appended to a file of
//! its own as it happens.
//!
//! A line is written with one `write` on a file opened for appending, before the worker goes
//! on: once written, the kernel keeps it even if the worker is killed the next instant. The
//! side effects the checker counts are lines of this file too, so the ledger shares no state
//! with the store under test.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Microseconds since the Unix epoch, by the system clock every worker on this machine shares.
pub(crate) fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

/// What a call was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A hot key many workers call at once.
    Contend,
    /// A key of a few seconds ago, called again.
    Retry,
    /// A hot key called with other arguments.
    Mismatch,
    /// A body that runs longer than its lease, renewing it.
    Slow,
    /// A body that pauses between its steps without renewing its lease, as a paused process
    /// would: past its lease, or (half of them) into its last quarter, where a faster clock
    /// already counts it passed.
    Stall,
    /// Like [`Op::Stall`], the pause after its last step, and it returns without looking at
    /// its lease: its completion races a takeover, on the store's path for records with
    /// steps or, on a key whose body has none, for records without.
    StallAtEnd,
    /// A body that pauses between its steps without renewing, past its lease or (half of
    /// them) into its last quarter, and never looks at its lease, as a body that does not race
    /// its work against it: once a retry took the key over, the store must refuse its next
    /// step's write, which stops it.
    Heedless,
    /// A body that records its first step, then fails: the key is released with the step,
    /// and the next caller resumes after it. On a key whose body has no steps, a failure
    /// before its effect.
    FailAfterStep,
    /// A body whose second step fails once before its effect and is tried again.
    StepRetry,
    /// A call its caller gives up on mid-body (the future is dropped).
    Abandon,
    /// A body that fails before any side effect: the key is released.
    Fail,
    /// A body that ends in an error stored as its outcome.
    StoreErr,
    /// A duplicate that waits for the first caller's outcome.
    Wait,
}

/// How a call ended, as its caller saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ending {
    /// The function's value, run now or replayed.
    Ok {
        /// The value.
        answer: String,
        /// Whether it came from an earlier call.
        replayed: bool,
    },
    /// An error stored as the outcome, run now or replayed.
    StoredErr {
        /// The stored error's text.
        answer: String,
        /// Whether it came from an earlier call.
        replayed: bool,
    },
    /// An `idem_core::Error` (`class` is its variant) or the body's own unstored failure.
    Error {
        /// The variant's name: `InProgress`, `Mismatch`, `NotRecorded`, ...
        class: String,
        /// Its message.
        message: String,
    },
    /// The caller dropped the call before it ended.
    Abandoned,
}

/// One line of a worker's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A call begins.
    Invoke {
        /// The call's id, unique in the run.
        call: String,
        /// Its key.
        key: String,
        /// Its arguments.
        payload: String,
        /// What it was asked to do.
        op: Op,
        /// When, in microseconds since the epoch.
        t: u64,
    },
    /// The call's body starts: it holds the key.
    Body {
        /// The call.
        call: String,
        /// Its attempt number.
        attempt: u32,
        /// Its fencing token.
        fencing: u64,
        /// When.
        t: u64,
    },
    /// A side effect, performed by a step's future.
    Effect {
        /// The call.
        call: String,
        /// Its key.
        key: String,
        /// The step.
        step: String,
        /// The fencing token of the owner that performed it.
        fencing: u64,
        /// When.
        t: u64,
    },
    /// `step` returned the step's value: it is in the record.
    StepDone {
        /// The call.
        call: String,
        /// The step.
        step: String,
        /// When.
        t: u64,
    },
    /// The engine told the body its lease is lost (`CallContext::lease_lost` resolved).
    LeaseLost {
        /// The call.
        call: String,
        /// When.
        t: u64,
    },
    /// The body returns.
    BodyEnd {
        /// The call.
        call: String,
        /// Whether the body saw its lease lost at any point.
        lease_lost: bool,
        /// When.
        t: u64,
    },
    /// The call returns to its caller.
    Complete {
        /// The call.
        call: String,
        /// How it ended.
        ending: Ending,
        /// When.
        t: u64,
    },
}

/// The file a worker appends its history to.
#[derive(Debug)]
pub(crate) struct HistoryWriter {
    file: Mutex<File>,
}

impl HistoryWriter {
    /// Appends to `path`, creating it.
    pub(crate) fn create(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(HistoryWriter {
            file: Mutex::new(file),
        })
    }

    /// Appends `event` as one line, in one write.
    pub(crate) fn write(&self, event: &Event) {
        let mut line = serde_json::to_vec(event).expect("events serialise");
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        // A history that can't be written can't be checked: stop here rather than lie.
        file.write_all(&line)
            .unwrap_or_else(|error| panic!("writing the history: {error}"));
    }
}

/// The events of every worker's file in `dir`, each with its worker's name (the file's).
pub(crate) fn read_all(dir: &Path) -> Result<Vec<(String, Vec<Event>)>, String> {
    let mut histories = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|error| error.to_string())? {
        let path = entry.map_err(|error| error.to_string())?.path();
        let process = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
            .to_owned();
        histories.push((process, read(&path).map_err(|error| error.to_string())?));
    }
    Ok(histories)
}

/// The events of one worker's file. A last line cut short is skipped: its event never
/// finished happening as far as the history is concerned.
pub(crate) fn read(path: &Path) -> io::Result<Vec<Event>> {
    let lines: Vec<String> = BufReader::new(File::open(path)?)
        .lines()
        .collect::<io::Result<_>>()?;
    let mut events = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(event) => events.push(event),
            Err(_) if index + 1 == lines.len() || line.trim().is_empty() => {}
            Err(error) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: {error} in {line:?}", path.display()),
                ))
            }
        }
    }
    Ok(events)
}
