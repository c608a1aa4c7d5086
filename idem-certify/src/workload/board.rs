//! The board of long pauses, shared by every worker process of a run through files beside the
//! histories: each process lists the keys its callers hold through a long pause (a slow body,
//! a stall), so that callers of every process aim retries at them, and the nemesis stops a
//! process in the middle of one. A caller that takes a key over marks it, so that the nemesis
//! resumes the owner it stopped while the taker still runs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history::{now_micros, Op};

/// A key held through a pause.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Pause {
    /// The key's name, as the history writes it.
    pub(crate) key: String,
    /// What its call was asked to do.
    pub(crate) op: Op,
    /// When the pause ends, in microseconds since the epoch.
    pub(crate) until: u64,
    /// Whether it is inside a step, after its effect, before the step is recorded.
    #[serde(default)]
    pub(crate) in_step: bool,
    /// On the nemesis's aim: the processes whose callers may take the key over (any when
    /// empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) takers: Vec<String>,
}

/// One process's list on the board, rewritten whenever it changes.
pub(crate) struct Board {
    dir: PathBuf,
    file: PathBuf,
    pauses: Mutex<BTreeMap<String, Pause>>,
}

impl Board {
    /// The board of the run whose histories include `history`, listing for process `process`.
    pub(crate) fn beside(history: &Path, process: &str) -> Self {
        let dir = board_dir(
            history
                .parent()
                .and_then(Path::parent)
                .unwrap_or(Path::new(".")),
        );
        // Best effort: without its directory, the board is empty and no retry is aimed.
        let _ = fs::create_dir_all(dir.join(TAKEN));
        Board {
            file: dir.join(format!("{process}.json")),
            dir,
            pauses: Mutex::new(BTreeMap::new()),
        }
    }

    /// Lists `pause` of call `call` until the returned guard is dropped.
    pub(crate) fn list(self: &Arc<Self>, call: &str, pause: Pause) -> Listed {
        self.change(|pauses| {
            pauses.insert(call.to_owned(), pause);
        });
        Listed {
            board: self.clone(),
            call: call.to_owned(),
        }
    }

    /// Every pause listed by any process, with the process that listed it.
    pub(crate) fn read(&self) -> Vec<(String, Pause)> {
        read_dir(&self.dir)
    }

    /// The keys the nemesis aims at, if any.
    pub(crate) fn aimed(&self) -> Vec<Pause> {
        fs::read(self.dir.join(AIMED))
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .unwrap_or_default()
    }

    /// Marks `key` taken over.
    pub(crate) fn mark_taken(&self, key: &str) {
        let _ = fs::write(self.dir.join(TAKEN).join(key), b"");
    }

    fn change(&self, change: impl FnOnce(&mut BTreeMap<String, Pause>)) {
        let mut pauses = self.pauses.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut pauses);
        let listed: Vec<&Pause> = pauses.values().collect();
        let json = serde_json::to_vec(&listed).expect("pauses serialise");
        // Written aside, then renamed over: a reader sees the old list or the new one.
        let aside = self.file.with_extension("new");
        if fs::write(&aside, json).is_ok() {
            let _ = fs::rename(&aside, &self.file);
        }
    }
}

/// A body, as the board knows it: where it lists its long pauses, its call and key, and what
/// it was asked to do.
pub(crate) struct Holder {
    /// The process's board.
    pub(crate) board: Arc<Board>,
    /// The call's id.
    pub(crate) call: String,
    /// The key's name.
    pub(crate) key: String,
    /// What the call was asked to do.
    pub(crate) op: Op,
}

impl Holder {
    /// Sleeps `pause`, listed on the board meanwhile when it outlasts a lease: a stall, or a
    /// slow body renewing through it.
    pub(crate) async fn pause(&self, pause: Duration) {
        let long = matches!(
            self.op,
            Op::Slow | Op::Stall | Op::StallAtEnd | Op::Heedless
        );
        let _listed = long.then(|| {
            let pause = Pause {
                key: self.key.clone(),
                op: self.op,
                until: now_micros() + pause.as_micros() as u64,
                in_step: false,
                takers: Vec::new(),
            };
            self.board.list(&self.call, pause)
        });
        tokio::time::sleep(pause).await;
    }

    /// Waits `delay` inside a step, after its effect and before it is recorded, listed on the
    /// board meanwhile.
    pub(crate) async fn answer(&self, delay: Duration) {
        if delay.is_zero() {
            return;
        }
        let pause = Pause {
            key: self.key.clone(),
            op: self.op,
            until: now_micros() + delay.as_micros() as u64,
            in_step: true,
            takers: Vec::new(),
        };
        let _listed = self.board.list(&self.call, pause);
        tokio::time::sleep(delay).await;
    }

    /// Marks its key taken over: its body is a later attempt's.
    pub(crate) fn mark_taken(&self) {
        self.board.mark_taken(&self.key);
    }
}

/// A listed pause: unlisted when dropped, however its body ends.
pub(crate) struct Listed {
    board: Arc<Board>,
    call: String,
}

impl Drop for Listed {
    fn drop(&mut self) {
        self.board.change(|pauses| {
            pauses.remove(&self.call);
        });
    }
}

/// Where the marks of keys taken over go.
const TAKEN: &str = "taken";

/// The nemesis's list on the board: the key of the owner it stopped, which callers aim at
/// first.
pub(crate) const AIMED: &str = "nemesis.json";

/// The board of the run whose directory is `run_dir`.
pub(crate) fn board_dir(run_dir: &Path) -> PathBuf {
    run_dir.join(BOARD)
}

/// The board's directory in a run's directory.
pub(crate) const BOARD: &str = "board";

/// Every pause listed on the board in `dir`, with the process that listed it (not the key the
/// nemesis aims retries at, which no process holds).
pub(crate) fn read_dir(dir: &Path) -> Vec<(String, Pause)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for path in entries.flatten().map(|entry| entry.path()) {
        let listed = path
            .extension()
            .is_some_and(|extension| extension == "json");
        if !listed || path.file_name().is_some_and(|name| name == AIMED) {
            continue;
        }
        let process = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_default()
            .to_owned();
        let pauses: Vec<Pause> = fs::read(&path)
            .ok()
            .and_then(|json| serde_json::from_slice(&json).ok())
            .unwrap_or_default();
        found.extend(pauses.into_iter().map(|pause| (process.clone(), pause)));
    }
    found
}

/// Forgets that `key` was taken over, on the board in `dir`.
pub(crate) fn unmark_taken(dir: &Path, key: &str) {
    let _ = fs::remove_file(dir.join(TAKEN).join(key));
}

/// Whether `key` was marked taken over on the board in `dir`.
pub(crate) fn was_taken(dir: &Path, key: &str) -> bool {
    dir.join(TAKEN).join(key).exists()
}

/// How long `pause` has left, in microseconds.
pub(crate) fn remaining(pause: &Pause) -> u64 {
    pause.until.saturating_sub(now_micros())
}
