//! The aimed stop: a worker process stopped (SIGSTOP) while one of its callers holds a key,
//! and resumed once another caller took that key over, while the taker still runs. Either a
//! slow body that has just begun its long pause (it wakes, renews and performs its next
//! effect: the store must refuse the renewal), or a step whose effect landed and whose
//! downstream has not answered yet (it wakes and records the step: the store must refuse the
//! write). The workload's retries aim at the stopped owner's key, listed on the board, so the
//! takeover comes as soon as the lease passes. A stop at a random moment finds such an owner
//! only now and then, and the takeover happens during it more rarely still.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::history::{now_micros, Op};
use crate::workload::board::{read_dir, remaining, unmark_taken, was_taken, Pause, AIMED};

/// How often the board is read while waiting.
const POLL: Duration = Duration::from_millis(10);

/// A process holding a key through a slow body's pause that has just begun.
pub(super) struct Holder {
    /// The process's name.
    pub(super) process: String,
    /// The key.
    pub(super) key: String,
}

/// Waits up to `patience` for a process among `processes` that holds a key on the board in
/// `board` one of two ways: a slow body that has just begun its pause, nearly three leases of
/// it ahead (enough to outlast a stop until the takeover, and to renew and act after it), or
/// a step waiting for its answer after its effect, a quarter of a lease of it ahead. The way
/// `in_step` says comes first; after half the patience, either will do. `None` when none did.
pub(super) fn find_holder(
    board: &Path,
    processes: &[&str],
    in_step: bool,
    lease: Duration,
    patience: Duration,
    rng: &mut fastrand::Rng,
) -> Option<Holder> {
    let began = Instant::now();
    loop {
        let either = began.elapsed() >= patience / 2;
        let holders: Vec<Holder> = read_dir(board)
            .into_iter()
            .filter(|(process, pause)| {
                let left = Duration::from_micros(remaining(pause));
                let holds = if pause.in_step {
                    left >= lease / 4
                } else {
                    pause.op == Op::Slow && left >= lease * 11 / 4
                };
                holds
                    && (either || pause.in_step == in_step)
                    && processes.contains(&process.as_str())
            })
            .map(|(process, pause)| Holder {
                process,
                key: pause.key,
            })
            .collect();
        if !holders.is_empty() {
            let index = rng.usize(..holders.len());
            return holders.into_iter().nth(index);
        }
        if began.elapsed() >= patience {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Lists `key` as the nemesis's target on the board in `board`, for `lasting`: callers aim
/// at it first, so that it is taken over as soon as its lease passes.
pub(super) fn aim(board: &Path, key: &str, lasting: Duration) {
    // A takeover of this key before the stop is not the one to wait for.
    unmark_taken(board, key);
    let target = [Pause {
        key: key.to_owned(),
        op: Op::Slow,
        until: now_micros() + lasting.as_micros() as u64,
        in_step: false,
    }];
    let json = serde_json::to_vec(&target).expect("pauses serialise");
    let aside = board.join(AIMED).with_extension("new");
    if std::fs::write(&aside, json).is_ok() {
        let _ = std::fs::rename(&aside, board.join(AIMED));
    }
}

/// No target any more.
pub(super) fn unaim(board: &Path) {
    let _ = std::fs::remove_file(board.join(AIMED));
}

/// Waits until `key` is marked taken over on the board in `board`, or `patience` passed;
/// then a moment more (up to `after`), so that the owner wakes while the taker, which looks
/// into the earlier attempt first, still runs. How long the takeover took, if it came.
pub(super) fn await_takeover(
    board: &Path,
    key: &str,
    patience: Duration,
    after: Duration,
    rng: &mut fastrand::Rng,
) -> Option<Duration> {
    let began = Instant::now();
    let mut taken = was_taken(board, key);
    while !taken && began.elapsed() < patience {
        std::thread::sleep(POLL);
        taken = was_taken(board, key);
    }
    let took = began.elapsed();
    std::thread::sleep(Duration::from_millis(rng.u64(..=after.as_millis() as u64)));
    taken.then_some(took)
}
