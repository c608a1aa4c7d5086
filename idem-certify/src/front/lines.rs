//! The front-end run's own histories, beside the engine's: one JSON line per event, each in
//! one write (the callers' requests, the servers' call contexts, the downstream's charges).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A history of JSON lines, appended to from any thread.
pub(crate) struct JsonLines(Mutex<File>);

impl JsonLines {
    /// Appends to `path`, creating it.
    pub(crate) fn create(path: &Path) -> Result<Self, String> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|error| format!("{}: {error}", path.display()))?;
        Ok(JsonLines(Mutex::new(file)))
    }

    /// Appends `event` as one line, in one write: a process killed mid-way leaves at most its
    /// last line cut short.
    pub(crate) fn write(&self, event: &impl Serialize) {
        let mut line = serde_json::to_vec(event).expect("events serialise");
        line.push(b'\n');
        let mut file = self.0.lock().unwrap_or_else(|e| e.into_inner());
        file.write_all(&line)
            .unwrap_or_else(|error| panic!("writing a history: {error}"));
    }
}

/// The events of the history at `path`; none when there is no such file. A last line cut
/// short (its process killed while writing it) is skipped.
pub(crate) fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut events = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        match serde_json::from_str(line) {
            Ok(event) => events.push(event),
            Err(_) if index + 1 == lines.len() => {}
            Err(error) => return Err(format!("{}: {error} in {line:?}", path.display())),
        }
    }
    Ok(events)
}
