//! The history as the checker reads it: every call with what happened to it, by key.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::history::{Ending, Event, Op};

/// A fault injected into a worker process.
#[derive(Clone, Debug, Serialize)]
pub struct FaultRecord {
    /// `kill`, `stop`, `restart` or a network fault (`net-latency`, ...).
    pub kind: &'static str,
    /// The process it hit; `*` for all of them.
    pub process: String,
    /// When it began, in microseconds since the epoch.
    pub start: u64,
    /// When it ended (the kill's own instant; a stop's resumption).
    pub end: u64,
}

/// What the store holds for a key at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FinalRecord {
    /// No record.
    Absent,
    /// An in-progress record.
    InProgress,
    /// A completed record, with its answer when it decodes.
    Completed {
        /// The value or stored error's text.
        answer: Option<String>,
    },
    /// The read failed.
    Unreadable {
        /// Why.
        error: String,
    },
}

/// One call, assembled from its events.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CallRecord {
    /// Its id.
    pub id: String,
    /// The worker process that made it.
    pub(crate) process: String,
    /// Its key.
    pub key: String,
    /// Its arguments.
    pub(crate) payload: String,
    /// What it was asked to do.
    pub(crate) op: Option<Op>,
    /// When it began.
    pub(crate) invoked: u64,
    /// When its body began, with the attempt and fencing token, if it ran.
    pub(crate) body: Option<(u64, u32, u64)>,
    /// Its side effects: step, fencing token, when.
    pub(crate) effects: Vec<(String, u64, u64)>,
    /// The steps `step` returned, and when.
    pub(crate) steps_done: Vec<(String, u64)>,
    /// When its body returned, and whether it saw its lease lost.
    pub(crate) body_end: Option<(u64, bool)>,
    /// When the engine first told its body the lease was lost.
    pub(crate) lease_lost_at: Option<u64>,
    /// How it ended, and when.
    pub(crate) ending: Option<(Ending, u64)>,
}

impl CallRecord {
    /// The answer it got, when it got one (a value or a stored error).
    pub(crate) fn answer(&self) -> Option<(&str, bool)> {
        match &self.ending {
            Some((Ending::Ok { answer, replayed }, _))
            | Some((Ending::StoredErr { answer, replayed }, _)) => Some((answer, *replayed)),
            _ => None,
        }
    }

    /// The class of the error it ended with, if it did.
    pub(crate) fn error_class(&self) -> Option<&str> {
        match &self.ending {
            Some((Ending::Error { class, .. }, _)) => Some(class),
            _ => None,
        }
    }

    /// When it ended, if it did.
    pub(crate) fn ended_at(&self) -> Option<u64> {
        self.ending.as_ref().map(|(_, t)| *t)
    }

    /// The first of `others` that took this call's key over before `until`: a body with a
    /// higher fencing token, begun after this one's and before `until`.
    pub(crate) fn taken_over_before<'a>(
        &self,
        until: u64,
        others: &[&'a CallRecord],
    ) -> Option<&'a CallRecord> {
        let (began, _, fencing) = self.body?;
        others.iter().copied().find(|other| {
            other.body.is_some_and(|(start, _, theirs)| {
                theirs > fencing && began < start && start < until
            })
        })
    }
}

/// The whole run: calls by key, faults, final records.
#[derive(Debug, Default)]
pub struct Run {
    /// The calls, by id.
    pub calls: BTreeMap<String, CallRecord>,
    /// The faults.
    pub faults: Vec<FaultRecord>,
    /// The final record of every key called.
    pub finals: BTreeMap<String, FinalRecord>,
    /// When the run ended, for bodies cut short by a kill.
    pub ended: u64,
    /// How much later than a takeover its first owner may hear of the loss and still count as
    /// told: twice the largest clock offset among the workers (a taker ahead and an owner
    /// behind), and a little for the scheduling of the news.
    pub told_within: u64,
    /// The lease of every call, in microseconds.
    pub lease: u64,
}

impl Run {
    /// Adds the events of process `process`'s history.
    pub fn add_history(&mut self, process: &str, events: Vec<Event>) {
        for event in events {
            match event {
                Event::Invoke {
                    call,
                    key,
                    payload,
                    op,
                    t,
                } => {
                    let record = self.call(&call, process);
                    record.key = key;
                    record.payload = payload;
                    record.op = Some(op);
                    record.invoked = t;
                }
                Event::Body {
                    call,
                    attempt,
                    fencing,
                    t,
                } => self.call(&call, process).body = Some((t, attempt, fencing)),
                Event::Effect {
                    call,
                    step,
                    fencing,
                    t,
                    ..
                } => self.call(&call, process).effects.push((step, fencing, t)),
                Event::StepDone { call, step, t } => {
                    self.call(&call, process).steps_done.push((step, t))
                }
                Event::BodyEnd {
                    call,
                    lease_lost,
                    t,
                } => self.call(&call, process).body_end = Some((t, lease_lost)),
                Event::LeaseLost { call, t } => {
                    let record = self.call(&call, process);
                    record.lease_lost_at = Some(record.lease_lost_at.map_or(t, |at| at.min(t)));
                }
                Event::Complete { call, ending, t } => {
                    self.call(&call, process).ending = Some((ending, t))
                }
            }
        }
    }

    fn call(&mut self, id: &str, process: &str) -> &mut CallRecord {
        self.calls
            .entry(id.to_owned())
            .or_insert_with(|| CallRecord {
                id: id.to_owned(),
                process: process.to_owned(),
                ..CallRecord::default()
            })
    }

    /// The calls of each key, in the order they began.
    pub(crate) fn by_key(&self) -> BTreeMap<&str, Vec<&CallRecord>> {
        let mut keys: BTreeMap<&str, Vec<&CallRecord>> = BTreeMap::new();
        for call in self.calls.values() {
            keys.entry(&call.key).or_default().push(call);
        }
        for calls in keys.values_mut() {
            calls.sort_by_key(|call| (call.invoked, call.id.clone()));
        }
        keys
    }

    /// When `call`'s body stopped running: its return, its call's end, the kill of its
    /// process, or the end of the run.
    pub(crate) fn body_stopped(&self, call: &CallRecord) -> u64 {
        if let Some((t, _)) = call.body_end {
            return t;
        }
        if let Some(t) = call.ended_at() {
            return t;
        }
        let started = call.body.map_or(call.invoked, |(t, _, _)| t);
        self.faults
            .iter()
            .filter(|fault| fault.kind == "kill" && fault.process == call.process)
            .map(|fault| fault.start)
            .filter(|&t| t >= started)
            .min()
            .unwrap_or(self.ended)
    }

    /// Whether the store may rightly have judged `call`'s lease passed between `from` and
    /// `to`: it did not renew (a stall) and its lease from the reservation passed by then, it
    /// was abandoned (its lease let pass) by then, the engine told it the lease was lost by
    /// `to`, its process was killed, stopped or cut off in that time, the store restarted, or
    /// it ended by `to` in an error that leaves the key to the lease.
    pub(crate) fn excused(&self, call: &CallRecord, from: u64, to: u64) -> bool {
        let reach = to + self.told_within;
        let unrenewed = matches!(call.op, Some(Op::Stall | Op::StallAtEnd | Op::Heedless));
        if unrenewed && reach >= call.invoked + self.lease {
            return true;
        }
        if call.op == Some(Op::Abandon) && call.ended_at().is_some_and(|ended| ended <= reach) {
            return true;
        }
        if call.lease_lost_at.is_some_and(|told| told <= reach) {
            return true;
        }
        if let (Some(class), Some(ended)) = (call.error_class(), call.ended_at()) {
            if ended <= to && matches!(class, "NotRecorded" | "LeaseLost" | "Store" | "Aborted") {
                return true;
            }
        }
        // A restart of the store ("*") hits every process.
        self.faults.iter().any(|fault| {
            (fault.process == call.process || fault.process == "*")
                && fault.start <= to
                && fault.end.max(fault.start) >= from
        })
    }

    /// Whether `call`, whose key was taken over at `taken`, could have known it by `t`: its
    /// clock said its lease had passed (within the clocks' offsets and the news's scheduling),
    /// and it was not frozen since then (a process stopped between its look at the lease and
    /// its next effect performs that effect the instant it resumes). A restart of the store
    /// may lose the record without the lease passing: the owner learns it from its next
    /// renewal, within a lease.
    pub(crate) fn could_know(&self, call: &CallRecord, taken: u64, t: u64) -> bool {
        let mut knows_from = taken + self.told_within;
        for fault in &self.faults {
            let frozen = fault.kind == "stop" && fault.process == call.process;
            if frozen && fault.start <= t && fault.end >= taken {
                knows_from = knows_from.max(fault.end + self.told_within);
            }
            if fault.kind == "restart" && fault.start <= t && fault.end + self.lease >= taken {
                knows_from = knows_from.max(fault.end + self.lease + self.told_within);
            }
        }
        t > knows_from
    }

    /// Whether `call` heard that its outcome would not count: the engine told its body the
    /// lease was lost, or it ended in an error that says so.
    pub(crate) fn told(&self, call: &CallRecord) -> bool {
        call.lease_lost_at.is_some()
            || call.body_end.is_some_and(|(_, lost)| lost)
            || matches!(call.error_class(), Some("NotRecorded" | "LeaseLost"))
    }
}
