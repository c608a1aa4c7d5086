//! The checker of a front-end run: the answers callers got, key by key and principal by
//! principal, the handler's executions on the servers (judged by the engine's own rules on
//! effects, bodies, takeovers and fencing), and the downstream's charges.
//!
//! Beyond the engine's classes, some are the front ends' own: answers to another principal,
//! handlers outside the engine's call or in another request's context, keys released early,
//! refusals the workload never provokes, replays not flagged as such (`replies`), and the
//! downstream's charges, exactly one per order, under one key, behind every success
//! (`downstream`).

mod downstream;
pub mod model;
mod replies;

use std::collections::{BTreeMap, BTreeSet};

use super::model::{CallRecord, Run};
use super::{bodies, effects, takeovers, Anomaly, Class, Findings, Found};
use crate::history::Ending;
use model::{is_request, Answer, FrontRun};

/// The class of an execution that ended as its service's failure, which holds the key until
/// its lease passes.
pub(crate) const SERVICE_ERROR: &str = "ServiceError";

/// Checks a front-end run.
pub fn check_front(front: &FrontRun) -> Findings {
    let run = &front.run;
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
        let (requests, executions): (Vec<&CallRecord>, Vec<&CallRecord>) =
            calls.iter().partition(|call| is_request(call));
        answers(front, key, &requests, &executions, &mut found);
        replies::refusals(front, &requests, &mut found);
        replies::replay_flags(front, &requests, &mut found);
        replies::contexts(front, key, &executions, &mut found);
        downstream::behind_answers(front, key, &requests, &mut found);
        outside_call(run, &executions, &mut found);
        effects(run, &executions, &mut found);
        bodies(run, &executions, &mut found);
        takeovers::stale_owners(run, &executions, &mut found);
        released_early(run, &executions, &mut found);
        let allowed = takeovers::fencing(run, key, &executions, &mut found);
        findings.fencing_regressions.extend(allowed);
    }
    findings.anomalies.extend(downstream::per_order(front));
    findings.anomalies.extend(replies::shared_contexts(front));
    findings.anomalies.extend(replies::served_flags(front));
    findings
}

/// Every answer to a principal's key is one answer, the principal's own, for its request's
/// body, from an execution that was not taken over while it ran.
fn answers(
    front: &FrontRun,
    key: &str,
    requests: &[&CallRecord],
    executions: &[&CallRecord],
    found: &mut Found<'_>,
) {
    let run = &front.run;
    let principal = key.split_once('/').map_or(key, |(principal, _)| principal);
    // Replays are compared with the first answer by status as well as body: a stored
    // answer replayed under another status is a second answer.
    let mut distinct: BTreeMap<(u16, &str), &str> = BTreeMap::new();
    for request in requests {
        if let (Some(&(status, true)), Some((Ending::Error { message, .. }, _))) =
            (front.statuses.get(&request.id), request.ending.as_ref())
        {
            distinct.entry((status, message)).or_insert(&request.id);
        }
        let Some((answer, _)) = request.answer() else {
            continue;
        };
        let status = front
            .statuses
            .get(&request.id)
            .map_or(200, |&(status, _)| status);
        distinct.entry((status, answer)).or_insert(&request.id);
        let parts = Answer::of(answer);
        let (whose, payload) = (parts.principal, parts.payload);
        if whose != Some(principal) {
            found(
                Class::AnswerToOtherPrincipal,
                format!(
                    "{} asked as {principal} and was answered {answer:?}",
                    request.id
                ),
                vec![&request.id],
            );
        }
        if payload != Some(request.payload.as_str()) {
            found(
                Class::AnswerForOtherArguments,
                format!("sent {:?}, answered {answer:?}", request.payload),
                vec![&request.id],
            );
        }
    }
    if distinct.len() > 1 {
        found(
            Class::TwoAnswers,
            format!("{} different answers", distinct.len()),
            distinct.values().copied().collect(),
        );
    }
    let answered: BTreeSet<&str> = distinct
        .keys()
        .filter_map(|(_, answer)| answer.split('|').next())
        .collect();
    for execution in executions
        .iter()
        .filter(|call| answered.contains(call.id.as_str()))
    {
        if let Some(successor) =
            execution.taken_over_before(run.body_stopped(execution), executions)
        {
            found(
                Class::StaleWriteAccepted,
                format!(
                    "{}'s answer was given although {} took its key over while it ran",
                    execution.id, successor.id
                ),
                vec![&execution.id, &successor.id],
            );
        }
    }
}

/// Every execution runs inside the engine's call: one that never saw it (no body recorded)
/// ran outside it, where its steps are not recorded and its lease not held. One that did
/// nothing after its invocation on a server that was killed is excused: the kill may have
/// landed between the invocation's line and the body's.
fn outside_call(run: &Run, executions: &[&CallRecord], found: &mut Found<'_>) {
    let cut_short = |call: &CallRecord| {
        call.effects.is_empty()
            && call.body_end.is_none()
            && run
                .faults
                .iter()
                .any(|fault| fault.kind == "kill" && fault.process == call.process)
    };
    for execution in executions
        .iter()
        .filter(|call| call.body.is_none() && !cut_short(call))
    {
        found(
            Class::HandlerOutsideCall,
            format!("{} ran without the engine's call", execution.id),
            vec![&execution.id],
        );
    }
}

/// A handler whose service failed after it began holds its key until its lease passes: no
/// other execution of the key begins within half a lease of its end (a lease from its last
/// renewal, which came at most a third of a lease before), unless the store's server
/// restarted meanwhile and may have lost the record.
///
/// A fault on the server's store link (or a stop of the server) between the reservation and
/// the body may spend the lease before the body begins: the renewal the engine makes then
/// lands late, and a body shorter than the renewal period runs on it alone. The key is then
/// held only as long as the engine still guarantees: past the service's failure (the engine
/// refuses a failure it knows its lease passed for) and a lease from the reservation.
fn released_early(run: &Run, executions: &[&CallRecord], found: &mut Found<'_>) {
    for held in executions
        .iter()
        .filter(|call| call.error_class() == Some(SERVICE_ERROR))
    {
        let (Some((ended, _)), Some((began, _, fencing))) = (held.body_end, held.body) else {
            continue;
        };
        // A lease lost meanwhile (its server stopped or cut off, the engine telling it) lets
        // the key go as the engine's rules allow.
        if run.excused(held, began, ended) {
            continue;
        }
        let held_until = match lease_spent_before_body(run, held, began, fencing) {
            Some(reserved) => ended
                .max(reserved + run.lease)
                .saturating_sub(run.told_within),
            None => ended + run.lease / 2,
        };
        let next = executions.iter().find(|other| {
            other.body.is_some_and(|(start, _, _)| {
                let restarted = run.faults.iter().any(|fault| {
                    fault.process == "*" && fault.start <= start && fault.end + run.lease >= ended
                });
                ended < start && start < held_until && !restarted
            })
        });
        if let Some(next) = next {
            let start = next.body.map_or(0, |(start, _, _)| start);
            found(
                Class::KeyReleasedEarly,
                format!(
                    "{} began {} ms after {}'s service failed, within its lease",
                    next.id,
                    (start - ended) / 1_000,
                    held.id
                ),
                vec![&held.id, &next.id],
            );
        }
    }
}

/// When `held` reserved its key, if a fault that can spend a lease (its server stopped, or
/// its own link to the store slowed or cut; not its callers' link nor the downstream's) lay
/// between that reservation and its body's start at `began`. A fencing token is the
/// proposer's clock when it reserved (idem-core's `store::fencing`), so the earlier of it and
/// the body's start bounds the reservation.
fn lease_spent_before_body(run: &Run, held: &CallRecord, began: u64, fencing: u64) -> Option<u64> {
    let reserved = fencing.min(began);
    run.faults
        .iter()
        .any(|fault| {
            fault.process == held.process
                && (fault.kind == "stop" || fault.kind.starts_with("net-"))
                && fault.start <= began
                && fault.end.max(fault.start) >= reserved
        })
        .then_some(reserved)
}
