//! The checker: anomalies by class, found in the run's history and the store's final records.

pub mod front;
pub mod model;
mod takeovers;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::workload::{STEPLESS_EFFECT, STEPS};
use model::{CallRecord, FinalRecord, Run};

/// The kinds of anomaly, each a promise of the contract broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Callers of one key got two different answers.
    TwoAnswers,
    /// A caller got the answer of a call with other arguments.
    AnswerForOtherArguments,
    /// A side effect ran twice for one key where no takeover allows it.
    DuplicateEffect,
    /// A step the record held ran again.
    RecordedStepRepeated,
    /// Two bodies ran at once for one key while the first owner's lease was live and nothing
    /// told it otherwise.
    ConcurrentBodies,
    /// Two owners of one key both had their outcome accepted, or a stale owner had a step it
    /// performed after the takeover recorded: a stale owner's write won.
    StaleWriteAccepted,
    /// A caller got an answer the store no longer holds while its TTL lives.
    LostCompletion,
    /// A stale owner, whose key was taken over while its body ran, performed an effect once
    /// it could know its lease had passed, or ended without being told its outcome did not
    /// count.
    StaleOwnerNotTold,
    /// A body got a fencing token no greater than an earlier body's of the same key that it
    /// took over. The regressions the design allows (a fresh reservation after a release)
    /// are listed apart: see [`Findings::fencing_regressions`].
    FencingTokenRegressed,
    /// A front end delivered an answer to a principal other than the one whose request the
    /// handler ran for: keys are not scoped by principal.
    AnswerToOtherPrincipal,
    /// A front end ran its handler outside the engine's call: no lease held, no step recorded.
    HandlerOutsideCall,
    /// A front end released a key whose handler's service failed after the handler began:
    /// another execution began before its lease could pass.
    KeyReleasedEarly,
    /// The downstream service performed one order's effect twice: the handler's requests to
    /// it did not carry one key per operation across its attempts.
    DownstreamEffectRepeated,
    /// The downstream charged one order under more than one `Idempotency-Key`: a takeover
    /// sent the charge again under a key of its own.
    DownstreamKeyChanged,
    /// A caller got a success whose charge the downstream never made, or made for another
    /// order.
    ChargeMissing,
    /// A request was refused with a 4xx other than 409 (in progress): every send of a key
    /// carries the same body, so no such refusal is legitimate in the workload.
    UnexpectedRefusal,
    /// An answer not flagged `Idempotent-Replayed` came from an execution run for another
    /// request: a replay that did not say so.
    ReplayNotFlagged,
    /// An execution's call context belongs to another request: another key or principal, or,
    /// where the front end scopes keys by the request context's principal (`--front lambda`),
    /// a scope other than that principal's.
    ContextOfOtherRequest,
    /// The answer of the execution an attempt ran was flagged `Idempotent-Replayed`.
    FirstAnswerFlaggedReplayed,
}

impl Class {
    /// Every class, in report order.
    pub(crate) const ALL: [Class; 19] = [
        Class::TwoAnswers,
        Class::AnswerForOtherArguments,
        Class::DuplicateEffect,
        Class::RecordedStepRepeated,
        Class::ConcurrentBodies,
        Class::StaleWriteAccepted,
        Class::LostCompletion,
        Class::StaleOwnerNotTold,
        Class::FencingTokenRegressed,
        Class::AnswerToOtherPrincipal,
        Class::HandlerOutsideCall,
        Class::KeyReleasedEarly,
        Class::DownstreamEffectRepeated,
        Class::DownstreamKeyChanged,
        Class::ChargeMissing,
        Class::UnexpectedRefusal,
        Class::ReplayNotFlagged,
        Class::ContextOfOtherRequest,
        Class::FirstAnswerFlaggedReplayed,
    ];

    /// What it means, for the report.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Class::TwoAnswers => "callers of one key got two different answers",
            Class::AnswerForOtherArguments => "a caller got the answer of other arguments",
            Class::DuplicateEffect => "a side effect ran twice outside an allowed takeover",
            Class::RecordedStepRepeated => "a step the record held ran again",
            Class::ConcurrentBodies => {
                "two bodies ran at once while the first owner's lease was live"
            }
            Class::StaleWriteAccepted => {
                "a stale owner's outcome or step was accepted after a takeover"
            }
            Class::LostCompletion => "an answer given is not in the store while its TTL lives",
            Class::StaleOwnerNotTold => {
                "a taken-over owner acted once it could know, or was never told"
            }
            Class::FencingTokenRegressed => {
                "a takeover's fencing token was not above the previous owner's"
            }
            Class::AnswerToOtherPrincipal => "a principal got an answer made for another",
            Class::HandlerOutsideCall => "a front end ran its handler outside the engine's call",
            Class::KeyReleasedEarly => {
                "a key was run again within the lease of a handler whose service failed"
            }
            Class::DownstreamEffectRepeated => "the downstream performed one order's effect twice",
            Class::DownstreamKeyChanged => "the downstream was asked one order under two keys",
            Class::ChargeMissing => "a success had no charge of its order behind it",
            Class::UnexpectedRefusal => {
                "a request was refused with a 4xx the workload never provokes"
            }
            Class::ReplayNotFlagged => "a replay was answered without Idempotent-Replayed",
            Class::ContextOfOtherRequest => "an execution ran in another request's call context",
            Class::FirstAnswerFlaggedReplayed => "a first execution's answer said it was a replay",
        }
    }
}

/// One anomaly: its class, key and the calls involved.
#[derive(Clone, Debug, Serialize)]
pub struct Anomaly {
    /// Its class.
    pub class: Class,
    /// The key.
    pub(crate) key: String,
    /// What happened, in a sentence.
    pub(crate) detail: String,
    /// The ids of the calls involved.
    pub(crate) calls: Vec<String>,
}

/// A call answered "not recorded" although the store holds its outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FalseAlarm {
    /// The call's id.
    pub call: String,
    /// Its key.
    pub key: String,
}

/// What the checker found.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    /// The anomalies.
    pub anomalies: Vec<Anomaly>,
    /// Calls answered "not recorded" whose outcome the store holds: false alarms, counted
    /// apart from anomalies, each named.
    pub false_alarms: Vec<FalseAlarm>,
    /// Bodies whose fencing token was not above that of a body of the same key that began
    /// before them, where the design allows it: a fresh reservation (attempt 1) after the
    /// earlier body stopped, which found no record to take over (a release, an expiry) and
    /// kept the token its own clock proposed. Counted apart: no two bodies overlapped, but a
    /// downstream system fencing on the token would refuse the later one.
    pub fencing_regressions: Vec<Anomaly>,
}

impl Findings {
    /// How many anomalies of each class.
    pub(crate) fn counts(&self) -> BTreeMap<Class, usize> {
        let mut counts: BTreeMap<Class, usize> = Class::ALL.iter().map(|&c| (c, 0)).collect();
        for anomaly in &self.anomalies {
            *counts.entry(anomaly.class).or_default() += 1;
        }
        counts
    }
}

/// Checks the run.
pub fn check(run: &Run) -> Findings {
    let mut findings = Findings::default();
    for (key, calls) in run.by_key() {
        let mut found = |class: Class, detail: String, ids: Vec<&str>| {
            findings.anomalies.push(Anomaly {
                class,
                key: key.to_owned(),
                detail,
                calls: ids.into_iter().map(str::to_owned).collect(),
            })
        };
        answers(&calls, &mut found);
        effects(run, &calls, &mut found);
        bodies(run, &calls, &mut found);
        takeovers::stale_owners(run, &calls, &mut found);
        let allowed = takeovers::fencing(run, key, &calls, &mut found);
        let final_record = run.finals.get(key);
        completions(&calls, final_record, &mut found);
        findings.fencing_regressions.extend(allowed);
        findings
            .false_alarms
            .extend(false_alarms(key, &calls, final_record));
    }
    findings
}

pub(crate) type Found<'a> = dyn FnMut(Class, String, Vec<&str>) + 'a;

/// One answer per key, for its own arguments, accepted from one owner.
fn answers(calls: &[&CallRecord], found: &mut Found<'_>) {
    let mut distinct: BTreeMap<&str, &str> = BTreeMap::new();
    let mut fresh: Vec<&str> = Vec::new();
    for call in calls {
        let Some((answer, replayed)) = call.answer() else {
            continue;
        };
        distinct.entry(answer).or_insert(&call.id);
        if !answer.ends_with(&format!("|{}", call.payload)) {
            found(
                Class::AnswerForOtherArguments,
                format!("called with {:?}, answered {answer:?}", call.payload),
                vec![&call.id],
            );
        }
        if !replayed {
            fresh.push(&call.id);
        }
    }
    if distinct.len() > 1 {
        found(
            Class::TwoAnswers,
            format!("{} different answers", distinct.len()),
            distinct.values().copied().collect(),
        );
    }
    if fresh.len() > 1 {
        found(
            Class::StaleWriteAccepted,
            format!("{} calls had their own outcome accepted", fresh.len()),
            fresh,
        );
        return;
    }
    // An owner whose key was taken over before it answered can't have had its outcome
    // accepted: the successor's reservation came first, and fences it out.
    for call in calls {
        let (Some((_, false)), Some(ended)) = (call.answer(), call.ended_at()) else {
            continue;
        };
        if let Some(successor) = call.taken_over_before(ended, calls) {
            found(
                Class::StaleWriteAccepted,
                format!(
                    "{} had its outcome accepted after {} took its key over",
                    call.id, successor.id
                ),
                vec![&call.id, &successor.id],
            );
        }
    }
}

/// Each step's effect once per key, but after a takeover the contract allows.
fn effects(run: &Run, calls: &[&CallRecord], found: &mut Found<'_>) {
    for step in STEPS.into_iter().chain([STEPLESS_EFFECT]) {
        let mut done: Vec<(u64, u64, &CallRecord)> = calls
            .iter()
            .flat_map(|call| {
                call.effects
                    .iter()
                    .filter(move |(name, _, _)| name == step)
                    .map(move |&(_, fencing, t)| (t, fencing, *call))
            })
            .collect();
        done.sort_by_key(|&(t, _, call)| (t, call.id.clone()));
        for pair in done.windows(2) {
            let ((t1, fencing1, first), (t2, fencing2, second)) = (pair[0], pair[1]);
            let ids = vec![first.id.as_str(), second.id.as_str()];
            if first.id == second.id {
                found(
                    Class::DuplicateEffect,
                    format!("step {step} ran twice in one call"),
                    ids,
                );
                continue;
            }
            // An owner acting after its key was taken over: the stale-owner rule judges whether
            // it could have known.
            let stale_late = fencing2 < fencing1
                && second
                    .body
                    .is_some_and(|(began, _, _)| began < run.body_stopped(first));
            if stale_late {
                continue;
            }
            if let Some((_, recorded)) = first.steps_done.iter().find(|(name, _)| name == step) {
                if *recorded < t2 {
                    found(
                        Class::RecordedStepRepeated,
                        format!("step {step} ran again after {} recorded it", first.id),
                        ids,
                    );
                    continue;
                }
            }
            let taken_over = fencing2 > fencing1 && run.excused(first, t1, t2);
            if !taken_over {
                found(
                    Class::DuplicateEffect,
                    format!(
                        "step {step} ran under fencing tokens {fencing1} then {fencing2} with no \
                         lease lost between"
                    ),
                    ids,
                );
            }
        }
    }
}

/// One body at a time per key, unless the older owner (the lower fencing token: its
/// reservation came first, whenever its answer arrived) lost its lease by the time the newer
/// one's body began.
fn bodies(run: &Run, calls: &[&CallRecord], found: &mut Found<'_>) {
    let ran: Vec<(&CallRecord, u64, u64, u64)> = calls
        .iter()
        .filter_map(|call| {
            call.body
                .map(|(start, _, fencing)| (*call, start, run.body_stopped(call), fencing))
        })
        .collect();
    for (index, &(a, start_a, stop_a, fencing_a)) in ran.iter().enumerate() {
        for &(b, start_b, stop_b, fencing_b) in &ran[index + 1..] {
            if start_a >= stop_b || start_b >= stop_a {
                continue;
            }
            let ((older, older_start), (newer, newer_start)) = if fencing_a <= fencing_b {
                ((a, start_a), (b, start_b))
            } else {
                ((b, start_b), (a, start_a))
            };
            let overlap_from = older_start.max(newer_start);
            if !run.excused(older, older_start, overlap_from) {
                found(
                    Class::ConcurrentBodies,
                    format!(
                        "{} (fencing {}) ran while {} (fencing {}) still did",
                        newer.id,
                        fencing_a.max(fencing_b),
                        older.id,
                        fencing_a.min(fencing_b)
                    ),
                    vec![&older.id, &newer.id],
                );
            }
        }
    }
}

/// Every answer given is the store's, to the end.
fn completions(calls: &[&CallRecord], final_record: Option<&FinalRecord>, found: &mut Found<'_>) {
    let given: BTreeSet<(&str, &str)> = calls
        .iter()
        .filter_map(|call| call.answer().map(|(answer, _)| (answer, call.id.as_str())))
        .collect();
    let Some((answer, id)) = given.iter().next() else {
        return;
    };
    let held = match final_record {
        Some(FinalRecord::Completed {
            answer: Some(stored),
        }) => given.iter().any(|(answer, _)| answer == stored),
        _ => false,
    };
    if !held {
        found(
            Class::LostCompletion,
            format!("{id} was answered {answer:?}; the store holds {final_record:?}"),
            vec![id],
        );
    }
}

/// Calls of `key` answered "not recorded" although the store holds their outcome.
fn false_alarms(
    key: &str,
    calls: &[&CallRecord],
    final_record: Option<&FinalRecord>,
) -> Vec<FalseAlarm> {
    let Some(FinalRecord::Completed {
        answer: Some(stored),
    }) = final_record
    else {
        return Vec::new();
    };
    calls
        .iter()
        .filter(|call| call.error_class() == Some("NotRecorded"))
        .filter(|call| stored.starts_with(&format!("{}|", call.id)))
        .map(|call| FalseAlarm {
            call: call.id.clone(),
            key: key.to_owned(),
        })
        .collect()
}
