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
    /// Whether it waits inside a step, rather than in a slow body's pause.
    pub(super) in_step: bool,
}

/// The clock offset of `process` among `processes`, if it is one of them.
fn clock_of(processes: &[(&str, i64)], process: &str) -> Option<i64> {
    (processes.iter())
        .find(|(name, _)| *name == process)
        .map(|&(_, offset)| offset)
}

/// The processes whose callers may take over the key of a slow body in `owner`'s process:
/// those whose clocks run at least `margin` ahead of its own, or every one when none does.
/// A taker sees the lease pass by its own clock, up to twice the clock fault earlier than the
/// owner does by its; the owner, resumed just after the takeover, still holds the lease by
/// its clock, and renews: the store must refuse that renewal. Resumed later, the owner's own
/// clock would tell it the lease had passed before it renewed, and a store that wrongly
/// accepts renewals would go unseen.
pub(super) fn takers(processes: &[(&str, i64)], owner: &str, margin: i64) -> Vec<String> {
    let Some(owner_offset) = clock_of(processes, owner) else {
        return Vec::new();
    };
    (processes.iter())
        .filter(|&&(name, offset)| name != owner && offset >= owner_offset + margin)
        .map(|&(name, _)| name.to_owned())
        .collect()
}

/// Waits up to `patience` for a process among `processes` that holds a key on the board in
/// `board` one of two ways: a slow body that has just begun its pause, nearly three leases of
/// it ahead (enough to outlast a stop until the takeover, and to renew and act after it), or
/// a step waiting for its answer after its effect, a quarter of a lease of it ahead. The way
/// `in_step` says comes first; after half the patience, either will do. Among slow bodies,
/// one in the process whose clock is furthest behind (`processes` with their clock offsets):
/// see [`takers`]. `None` when none did.
pub(super) fn find_holder(
    board: &Path,
    processes: &[(&str, i64)],
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
                    && clock_of(processes, process).is_some()
            })
            .map(|(process, pause)| Holder {
                process,
                key: pause.key,
                in_step: pause.in_step,
            })
            .collect();
        let slow = || holders.iter().filter(|holder| !holder.in_step);
        let furthest_behind = slow()
            .filter_map(|holder| clock_of(processes, &holder.process))
            .min();
        let holders: Vec<Holder> = match furthest_behind {
            Some(behind) if !in_step => (holders.into_iter())
                .filter(|holder| {
                    !holder.in_step && clock_of(processes, &holder.process) == Some(behind)
                })
                .collect(),
            _ => holders,
        };
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

/// Lists `key` as the nemesis's target on the board in `board`, for `lasting`: callers of
/// `takers` (of every process when empty) aim at it first, so that it is taken over as soon
/// as its lease passes.
pub(super) fn aim(board: &Path, key: &str, lasting: Duration, takers: Vec<String>) {
    // A takeover of this key before the stop is not the one to wait for.
    unmark_taken(board, key);
    let target = [Pause {
        key: key.to_owned(),
        op: Op::Slow,
        until: now_micros() + lasting.as_micros() as u64,
        in_step: false,
        takers,
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
