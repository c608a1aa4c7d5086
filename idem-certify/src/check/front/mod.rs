//! The checker of a front-end run: the answers callers got, key by key and principal by
//! principal, the handler's executions on the servers (judged by the engine's own rules on
//! effects, bodies, takeovers and fencing), and the downstream's charges.
//!
//! Beyond the engine's classes, four are the front ends' own:
//! [`Class::AnswerToOtherPrincipal`], [`Class::HandlerOutsideCall`],
//! [`Class::KeyReleasedEarly`] and [`Class::DownstreamEffectRepeated`].

pub mod model;

use std::collections::{BTreeMap, BTreeSet};

use super::model::{CallRecord, Run};
use super::{bodies, effects, takeovers, Anomaly, Class, Findings, Found};
use model::{is_request, FrontRun};

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
        answers(run, key, &requests, &executions, &mut found);
        outside_call(&executions, &mut found);
        effects(run, &executions, &mut found);
        bodies(run, &executions, &mut found);
        takeovers::stale_owners(run, &executions, &mut found);
        released_early(run, &executions, &mut found);
        let allowed = takeovers::fencing(run, key, &executions, &mut found);
        findings.fencing_regressions.extend(allowed);
    }
    for (order, made) in &front.charges {
        if made.len() > 1 {
            findings.anomalies.push(Anomaly {
                class: Class::DownstreamEffectRepeated,
                key: order.clone(),
                detail: format!("the downstream charged {order} {} times", made.len()),
                calls: made.clone(),
            });
        }
    }
    findings
}

/// Every answer to a principal's key is one answer, the principal's own, for its request's
/// body, from an execution that was not taken over while it ran.
fn answers(
    run: &Run,
    key: &str,
    requests: &[&CallRecord],
    executions: &[&CallRecord],
    found: &mut Found<'_>,
) {
    let principal = key.split_once('/').map_or(key, |(principal, _)| principal);
    let mut distinct: BTreeMap<&str, &str> = BTreeMap::new();
    for request in requests {
        let Some((answer, _)) = request.answer() else {
            continue;
        };
        distinct.entry(answer).or_insert(&request.id);
        let mut parts = answer.splitn(3, '|');
        let (_, whose, payload) = (parts.next(), parts.next(), parts.next());
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
        .filter_map(|answer| answer.split('|').next())
        .collect();
    for execution in executions
        .iter()
        .filter(|call| answered.contains(call.id.as_str()))
    {
        let Some((began, _, fencing)) = execution.body else {
            continue;
        };
        let stopped = run.body_stopped(execution);
        if let Some(successor) = executions.iter().find(|other| {
            other.body.is_some_and(|(start, _, theirs)| {
                theirs > fencing && began < start && start < stopped
            })
        }) {
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
/// ran outside it, where its steps are not recorded and its lease not held.
fn outside_call(executions: &[&CallRecord], found: &mut Found<'_>) {
    for execution in executions.iter().filter(|call| call.body.is_none()) {
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
fn released_early(run: &Run, executions: &[&CallRecord], found: &mut Found<'_>) {
    for held in executions
        .iter()
        .filter(|call| call.error_class() == Some(SERVICE_ERROR))
    {
        let Some((ended, _)) = held.body_end else {
            continue;
        };
        let next = executions.iter().find(|other| {
            other.body.is_some_and(|(start, _, _)| {
                let restarted = run.faults.iter().any(|fault| {
                    fault.process == "*" && fault.start <= start && fault.end + run.lease >= ended
                });
                ended < start && start < ended + run.lease / 2 && !restarted
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
