//! The front-end checker on what answers say beyond their bodies and on the downstream's
//! charges: a refusal the workload never provokes (`UnexpectedRefusal`), a replay that does
//! not say so or under another status, a first answer flagged as a replay
//! (`FirstAnswerFlaggedReplayed`), an execution in another request's call context
//! (`ContextOfOtherRequest`, or one not scoped by its principal where the run scopes so), a
//! success with no charge of its order behind it (`ChargeMissing`), an order charged under
//! two keys (`DownstreamKeyChanged`); an execution cut short by a kill before its body is
//! excused.

use idem_certify::check::front::model::{Charge, ClientEvent, ExecutionContext, ServedAttempt};
use idem_certify::check::model::FaultRecord;
use idem_certify::check::Class;
use idem_certify::history::{Event, Op};

use super::front::{answer, classes, execution, front_run, request, KEY, PAYLOAD};

/// A request of alice's key sent at `t` and answered `status` with `body`.
fn answered(call: &str, t: u64, status: u16, body: &str, replayed: bool) -> Vec<ClientEvent> {
    let mut events = request(call, "alice", t, body, replayed);
    if let ClientEvent::Answer { status: set, .. } = &mut events[1] {
        *set = status;
    }
    events
}

/// The call context execution `call` of `principal` says it ran in, for `request`.
fn context(call: &str, principal: &str, request: &str, context_key: &str) -> ExecutionContext {
    ExecutionContext {
        call: call.into(),
        request: request.into(),
        key: format!("{principal}/{KEY}"),
        attempt: format!("{request}#1"),
        context_key: context_key.into(),
    }
}

/// What attempt `attempt` was answered, from execution s0.1:0, flagged `replayed` or not.
fn served(attempt: &str, replayed: bool) -> ServedAttempt {
    ServedAttempt {
        attempt: attempt.into(),
        status: 201,
        replayed,
        execution: Some("s0.1:0".into()),
        t: 100,
    }
}

fn charge(call: &str, key: &str) -> Charge {
    Charge {
        call: call.into(),
        order: format!("alice/{KEY}"),
        key: key.into(),
        t: 30,
    }
}

#[test]
fn a_refusal_the_workload_never_provokes_is_found() {
    let mut callers = answered("c0.0", 0, 409, "in progress", false);
    callers.extend(answered("c1.0", 0, 422, "another body", false));
    let found = classes(&front_run(Vec::new(), callers));
    assert_eq!(found, [Class::UnexpectedRefusal]);
}

#[test]
fn a_replay_must_say_so_and_keep_its_status() {
    let servers = || vec![("s0.1", execution("s0.1:0", "alice", 10, Some(1)))];
    let body = answer("s0.1:0", "alice");
    let run_for_c0 = |callers: Vec<ClientEvent>| {
        let mut front = front_run(servers(), callers);
        front.add_contexts(vec![context("s0.1:0", "alice", "c0.0", "idem|http|x|k1")]);
        classes(&front)
    };
    let mut callers = answered("c0.0", 0, 201, &body, false);
    callers.extend(answered("c1.0", 200, 201, &body, true));
    assert_eq!(run_for_c0(callers), []);

    let mut unflagged = answered("c0.0", 0, 201, &body, false);
    unflagged.extend(answered("c1.0", 200, 201, &body, false));
    assert_eq!(run_for_c0(unflagged), [Class::ReplayNotFlagged]);

    let mut other_status = answered("c0.0", 0, 201, &body, false);
    other_status.extend(answered("c1.0", 200, 200, &body, true));
    assert_eq!(run_for_c0(other_status), [Class::TwoAnswers]);
}

#[test]
fn a_server_flags_replays_by_the_attempt_its_execution_ran_for() {
    let servers = vec![("s0.1", execution("s0.1:0", "alice", 10, Some(1)))];
    let mut front = front_run(servers, Vec::new());
    front.add_contexts(vec![context(
        "s0.1:0",
        "alice",
        "c0.0",
        "idem|http|alice|k1",
    )]);
    front.add_served(vec![served("c0.0#1", false), served("c1.0#1", true)]);
    assert_eq!(classes(&front), []);
    front.add_served(vec![served("c0.0#1", true), served("c2.0#1", false)]);
    assert_eq!(
        classes(&front),
        [Class::FirstAnswerFlaggedReplayed, Class::ReplayNotFlagged]
    );
}

#[test]
fn an_execution_in_another_requests_context_is_found() {
    let servers = vec![
        ("s0.1", execution("s0.1:0", "alice", 10, Some(1))),
        ("s1.1", execution("s1.1:0", "bob", 10, Some(1))),
    ];
    let mut front = front_run(servers, Vec::new());
    front.add_contexts(vec![
        context("s0.1:0", "alice", "c0.0", "idem|http|alice|k1"),
        context("s1.1:0", "bob", "c1.0", "idem|http|bob|k1"),
    ]);
    assert_eq!(classes(&front), []);
    // Bob's execution in alice's record, and one whose context is another key's.
    front.add_contexts(vec![context("s1.1:0", "bob", "c1.0", "idem|http|alice|k1")]);
    assert_eq!(classes(&front), [Class::ContextOfOtherRequest]);
    front.add_contexts(vec![context("s1.1:0", "bob", "c1.0", "idem|http|bob|k2")]);
    assert_eq!(classes(&front), [Class::ContextOfOtherRequest]);
}

#[test]
fn a_lambda_execution_not_scoped_by_its_principal_is_found() {
    let servers = vec![
        ("s0.1", execution("s0.1:0", "alice", 10, Some(1))),
        ("s1.1", execution("s1.1:0", "carol", 10, Some(1))),
    ];
    let mut front = front_run(servers, Vec::new());
    front.scoped_by_principal = true;
    front.add_contexts(vec![
        context("s0.1:0", "alice", "c0.0", "idem|http|=principal:alice|k1"),
        context("s1.1:0", "carol", "c1.0", "idem|http|=sub:carol|k1"),
    ]);
    assert_eq!(classes(&front), []);
    // Carol's key scoped by idem-http's default, a digest of her `Authorization`: one scope
    // per principal still, but not the principal the request context names.
    front.add_contexts(vec![context(
        "s1.1:0",
        "carol",
        "c1.0",
        "idem|http|=b64:9f2c|k1",
    )]);
    assert_eq!(classes(&front), [Class::ContextOfOtherRequest]);
}

#[test]
fn a_success_without_its_charge_and_a_charge_under_two_keys_are_found() {
    let servers = || vec![("s0.1", execution("s0.1:0", "alice", 10, Some(1)))];
    let with_charge = |charged: &str| {
        let body = format!("{}|{charged}", answer("s0.1:0", "alice"));
        let mut front = front_run(servers(), answered("c0.0", 0, 201, &body, false));
        front.add_charges(vec![charge("downstream:0", "dk-1")]);
        classes(&front)
    };
    assert_eq!(with_charge(&format!("downstream:0@alice/{KEY}")), []);
    assert_eq!(
        with_charge(&format!("downstream:7@alice/{KEY}")),
        [Class::ChargeMissing]
    );
    assert_eq!(
        with_charge(&format!("downstream:0@bob/{KEY}")),
        [Class::ChargeMissing]
    );
    let mut front = front_run(
        servers(),
        answered("c0.0", 0, 201, &answer("s0.1:0", "alice"), false),
    );
    front.add_charges(Vec::new());
    assert_eq!(classes(&front), [Class::ChargeMissing]);

    let mut front = front_run(Vec::new(), Vec::new());
    front.add_charges(vec![
        charge("downstream:0", "dk-1"),
        charge("downstream:1", "dk-2"),
    ]);
    assert_eq!(
        classes(&front),
        [Class::DownstreamEffectRepeated, Class::DownstreamKeyChanged]
    );
}

#[test]
fn an_execution_cut_short_by_a_kill_before_its_body_is_excused() {
    let invoked = vec![Event::Invoke {
        call: "s0.1:0".into(),
        key: format!("alice/{KEY}"),
        payload: PAYLOAD.into(),
        op: Op::Contend,
        t: 10,
    }];
    let mut front = front_run(vec![("s0.1", invoked)], Vec::new());
    assert_eq!(classes(&front), [Class::HandlerOutsideCall]);
    front.run.faults.push(FaultRecord {
        kind: "kill",
        process: "s0.1".into(),
        start: 20,
        end: 30,
    });
    assert_eq!(classes(&front), []);
}
