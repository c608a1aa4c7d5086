//! What the callers' answers say beyond their bodies, and whose call each execution ran in:
//! no refusal the workload never provokes, a replay flagged as one, and every execution in
//! its own request's call context (scoped by its principal where the front end scopes so).

use std::collections::{BTreeMap, BTreeSet};

use idem_core::{Key, KeyBuilder};

use super::model::{Answer, FrontRun};
use crate::check::model::CallRecord;
use crate::check::{Anomaly, Class, Found};
use crate::front::authorizer::principal_scope;

/// The 4xx the workload provokes on purpose: 409, a key still in progress, which a caller
/// sends again. Every send of a key carries the same body under a principal the layer
/// scopes by, so no other refusal (a 422 for another body, a 400 for a missing scope) is
/// legitimate.
const PROVOKED: [u16; 1] = [409];

/// Requests refused with a 4xx the workload never provokes.
pub(super) fn refusals(front: &FrontRun, requests: &[&CallRecord], found: &mut Found<'_>) {
    for request in requests {
        let Some(&(status, _)) = front.statuses.get(&request.id) else {
            continue;
        };
        if (400..500).contains(&status) && !PROVOKED.contains(&status) {
            found(
                Class::UnexpectedRefusal,
                format!("{} was refused with {status}", request.id),
                vec![&request.id],
            );
        }
    }
}

/// An answer not flagged as a replay comes from the execution that ran for that request
/// (idem-client's retries of a request keep its id): otherwise it is a replay that did not
/// say so. (A first execution's answer flagged as a replay cannot be told from a retry's
/// genuine replay from the client's side alone.)
pub(super) fn replay_flags(front: &FrontRun, requests: &[&CallRecord], found: &mut Found<'_>) {
    for request in requests {
        let Some((answer, false)) = request.answer() else {
            continue;
        };
        let Some(execution) = Answer::of(answer).execution else {
            continue;
        };
        let Some(context) = front.contexts.get(execution) else {
            continue;
        };
        if context.request != request.id {
            found(
                Class::ReplayNotFlagged,
                format!(
                    "{} got {execution}'s answer unflagged, but {execution} ran for {}",
                    request.id, context.request
                ),
                vec![&request.id, execution],
            );
        }
    }
}

/// Every execution runs in a call context of its own request: the engine's key
/// (`idem|NAME|SCOPE|KEY`) ends in the request's key, its scope is the principal's where the
/// run scopes keys by principal, and the request it says it ran for was sent with its
/// principal and key.
pub(super) fn contexts(
    front: &FrontRun,
    key: &str,
    executions: &[&CallRecord],
    found: &mut Found<'_>,
) {
    let (principal, asked) = key.split_once('/').unwrap_or(("", key));
    let scope = front
        .scoped_by_principal
        .then(|| encoded_scope(&principal_scope(principal)));
    for execution in executions {
        let Some(context) = front.contexts.get(&execution.id) else {
            continue;
        };
        let request_key = front
            .run
            .calls
            .get(&context.request)
            .map(|request| request.key.as_str());
        let own = context.key == key
            && context.context_key.ends_with(&format!("|{asked}"))
            && scope
                .as_ref()
                .is_none_or(|scope| scope_of(&context.context_key) == *scope)
            && request_key.is_none_or(|request_key| request_key == key);
        if !own {
            found(
                Class::ContextOfOtherRequest,
                format!(
                    "{} ran for {key} in the context {:?} of request {} ({request_key:?})",
                    execution.id, context.context_key, context.request
                ),
                vec![&execution.id],
            );
        }
    }
}

/// The scope of an engine key (`idem|NAME|SCOPE|KEY`), as the key encodes it.
fn scope_of(context_key: &str) -> Option<String> {
    Key::parse(context_key).ok()?.scope().map(str::to_owned)
}

/// `scope` as an engine key encodes it: idem-core's encoding, through a key built with it.
fn encoded_scope(scope: &str) -> Option<String> {
    let key = KeyBuilder::new("certify", "scope").scope(Some(scope));
    key.finish().ok()?.scope().map(str::to_owned)
}

/// One engine key for executions of two keys (two principals sharing one key's record).
pub(super) fn shared_contexts(front: &FrontRun) -> Vec<Anomaly> {
    let mut keys: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut calls: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for context in front.contexts.values() {
        keys.entry(&context.context_key)
            .or_default()
            .insert(&context.key);
        calls
            .entry(&context.context_key)
            .or_default()
            .push(context.call.clone());
    }
    keys.into_iter()
        .filter(|(_, keys)| keys.len() > 1)
        .map(|(context_key, keys)| Anomaly {
            class: Class::ContextOfOtherRequest,
            key: context_key.to_owned(),
            detail: format!("executions of {keys:?} ran in one call context {context_key:?}"),
            calls: calls.remove(context_key).unwrap_or_default(),
        })
        .collect()
}

/// Each answer a server gave that names its execution (a first answer does; a replay carries
/// only the headers the layer replays) is flagged a replay exactly when the execution ran
/// for another attempt.
pub(super) fn served_flags(front: &FrontRun) -> Vec<Anomaly> {
    let mut found = Vec::new();
    for served in &front.served {
        let Some(execution) = &served.execution else {
            continue;
        };
        let Some(context) = front.contexts.get(execution) else {
            continue;
        };
        let first = context.attempt == served.attempt;
        let class = match (first, served.replayed) {
            (true, true) => Class::FirstAnswerFlaggedReplayed,
            (false, false) => Class::ReplayNotFlagged,
            _ => continue,
        };
        found.push(Anomaly {
            class,
            key: context.key.clone(),
            detail: format!(
                "attempt {} got {execution}'s answer (which ran for attempt {}) {} as a replay",
                served.attempt,
                context.attempt,
                if served.replayed {
                    "flagged"
                } else {
                    "not flagged"
                }
            ),
            calls: vec![execution.clone()],
        });
    }
    found
}
