//! Hand-written histories of a takeover: an owner that stops after its first step, a taker
//! that takes the key over, under a lease of a second.

use idem_certify::check::model::{FaultRecord, Run};
use idem_certify::history::{Ending, Event, Op};

use super::{ran, run_of};

/// The lease of these runs, and how late news of a takeover may come.
const LEASE: u64 = 1_000;
const TOLD_WITHIN: u64 = 50;

/// `a`'s first step under token 1, from 0; then nothing more (a stall, a stop, a hang).
pub fn owner(op: Op) -> Vec<Event> {
    let mut events = ran("a", 0, 1, op);
    events.truncate(4);
    events
}

/// `b` takes the key over at `t` with `fencing` (attempt 2), finds `charge` recorded, ships
/// and answers.
pub fn taker(t: u64, fencing: u64) -> Vec<Event> {
    let mut events = ran("b", t - 10, fencing, Op::Contend);
    events.remove(2);
    if let Event::Body { attempt, .. } = &mut events[1] {
        *attempt = 2;
    }
    events
}

/// A run of `histories` under the lease, whose answer in the store is `b`'s.
pub fn run(histories: Vec<(&str, Vec<Event>)>) -> Run {
    let mut run = run_of(histories, Some("b"));
    run.lease = LEASE;
    run.told_within = TOLD_WITHIN;
    run
}

/// `w0.1` stopped from `start` to `end`.
pub fn stopped(run: &mut Run, start: u64, end: u64) {
    run.faults.push(FaultRecord {
        kind: "stop",
        process: "w0.1".into(),
        start,
        end,
    });
}

/// An ending in the error of `class`.
pub fn ended(class: &str) -> Ending {
    Ending::Error {
        class: class.into(),
        message: String::new(),
    }
}
