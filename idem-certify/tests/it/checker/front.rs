//! The front-end checker on hand-written histories: a request answered once and replayed to
//! its principal is clean; an answer reaching another principal (`AnswerToOtherPrincipal`),
//! two answers for one principal's key (`TwoAnswers`), a handler run outside the engine's call
//! (`HandlerOutsideCall`), a key run again within the lease of a handler whose service failed
//! (`KeyReleasedEarly`, unless its server was stopped past its lease, or a slow link to the
//! store spent the lease before the body began and the key was held as long as the engine
//! still promises) and an order charged twice downstream (`DownstreamEffectRepeated`) are
//! found.

use idem_certify::check::front::check_front;
use idem_certify::check::front::model::{Charge, ClientEvent, FrontRun};
use idem_certify::check::model::{FaultRecord, Run};
use idem_certify::check::Class;
use idem_certify::history::{Ending, Event, Op};

pub(super) const LEASE: u64 = 1_000_000;
pub(super) const KEY: &str = "k1";
pub(super) const PAYLOAD: &str = "k1:plain";

/// The events of execution `call` of `principal`'s key on a server, from `t`, under
/// `fencing`: both steps, and the answer it gave.
pub(super) fn execution(call: &str, principal: &str, t: u64, fencing: Option<u64>) -> Vec<Event> {
    let key = format!("{principal}/{KEY}");
    let mut events = vec![Event::Invoke {
        call: call.into(),
        key: key.clone(),
        payload: PAYLOAD.into(),
        op: Op::Contend,
        t,
    }];
    if let Some(fencing) = fencing {
        events.push(Event::Body {
            call: call.into(),
            attempt: 1,
            fencing,
            t: t + 10,
        });
    }
    for (index, step) in ["charge", "ship"].into_iter().enumerate() {
        let at = t + 20 + 20 * index as u64;
        events.push(Event::Effect {
            call: call.into(),
            key: key.clone(),
            step: step.into(),
            fencing: fencing.unwrap_or(0),
            t: at,
        });
        events.push(Event::StepDone {
            call: call.into(),
            step: step.into(),
            t: at + 10,
        });
    }
    events.push(Event::BodyEnd {
        call: call.into(),
        lease_lost: false,
        t: t + 70,
    });
    events
}

/// A request of `principal` sent at `t`, answered with `answer` (a replay or not).
pub(super) fn request(
    call: &str,
    principal: &str,
    t: u64,
    answer: &str,
    replayed: bool,
) -> Vec<ClientEvent> {
    vec![
        ClientEvent::Send {
            call: call.into(),
            principal: principal.into(),
            key: KEY.into(),
            payload: PAYLOAD.into(),
            server: "http://127.0.0.1:1".into(),
            t,
        },
        ClientEvent::Answer {
            call: call.into(),
            status: 201,
            body: answer.into(),
            replayed,
            t: t + 100,
        },
    ]
}

/// The answer execution `call` gives to `principal`.
pub(super) fn answer(call: &str, principal: &str) -> String {
    format!("{call}|{principal}|{PAYLOAD}")
}

pub(super) fn front_run(servers: Vec<(&str, Vec<Event>)>, callers: Vec<ClientEvent>) -> FrontRun {
    let mut front = FrontRun {
        run: Run {
            ended: 10_000_000,
            lease: LEASE,
            ..Run::default()
        },
        ..FrontRun::default()
    };
    for (process, events) in servers {
        front.run.add_history(process, events);
    }
    front.add_callers(callers);
    front
}

pub(super) fn classes(front: &FrontRun) -> Vec<Class> {
    check_front(front)
        .anomalies
        .iter()
        .map(|a| a.class)
        .collect()
}

#[test]
fn one_execution_answered_and_replayed_to_its_principal_is_clean() {
    let mut callers = request("c0.0", "alice", 0, &answer("s0.1:0", "alice"), false);
    callers.extend(request(
        "c1.0",
        "alice",
        50,
        &answer("s0.1:0", "alice"),
        true,
    ));
    // Bob's request with the same key is his own: another execution, another answer.
    callers.extend(request("c2.0", "bob", 60, &answer("s1.1:0", "bob"), false));
    let front = front_run(
        vec![
            ("s0.1", execution("s0.1:0", "alice", 10, Some(1))),
            ("s1.1", execution("s1.1:0", "bob", 70, Some(1))),
        ],
        callers,
    );
    assert_eq!(classes(&front), []);
}

#[test]
fn an_answer_made_for_another_principal_is_found() {
    let mut callers = request("c0.0", "alice", 0, &answer("s0.1:0", "alice"), false);
    callers.extend(request(
        "c1.0",
        "bob",
        200,
        &answer("s0.1:0", "alice"),
        true,
    ));
    let front = front_run(
        vec![("s0.1", execution("s0.1:0", "alice", 10, Some(1)))],
        callers,
    );
    assert_eq!(classes(&front), [Class::AnswerToOtherPrincipal]);
}

#[test]
fn two_answers_for_one_principals_key_are_found() {
    let mut callers = request("c0.0", "alice", 0, &answer("s0.1:0", "alice"), false);
    callers.extend(request(
        "c1.0",
        "alice",
        500,
        &answer("s1.1:0", "alice"),
        false,
    ));
    let mut servers = vec![("s0.1", execution("s0.1:0", "alice", 10, Some(1)))];
    servers.push(("s1.1", execution("s1.1:0", "alice", 510, Some(2))));
    let found = classes(&front_run(servers, callers));
    assert!(found.contains(&Class::TwoAnswers), "{found:?}");
    // The second execution ran the steps the first had recorded.
    assert!(found.contains(&Class::RecordedStepRepeated), "{found:?}");
}

#[test]
fn a_handler_run_outside_the_engines_call_is_found() {
    let callers = request("c0.0", "alice", 0, &answer("s0.1:0", "alice"), false);
    let front = front_run(
        vec![("s0.1", execution("s0.1:0", "alice", 10, None))],
        callers,
    );
    assert_eq!(classes(&front), [Class::HandlerOutsideCall]);
}

/// A handler whose service failed after its first step at 80, and the execution that resumed
/// its key `after` microseconds later.
fn failed_then_resumed(after: u64) -> FrontRun {
    let mut failed = execution("s0.1:0", "alice", 0, Some(1));
    failed.truncate(4);
    failed.push(Event::BodyEnd {
        call: "s0.1:0".into(),
        lease_lost: false,
        t: 80,
    });
    failed.push(Event::Complete {
        call: "s0.1:0".into(),
        ending: Ending::Error {
            class: "ServiceError".into(),
            message: String::new(),
        },
        t: 80,
    });
    let mut resumed = vec![
        Event::Invoke {
            call: "s1.1:0".into(),
            key: format!("alice/{KEY}"),
            payload: PAYLOAD.into(),
            op: Op::Contend,
            t: 80 + after,
        },
        Event::Body {
            call: "s1.1:0".into(),
            attempt: 2,
            fencing: 2,
            t: 80 + after,
        },
    ];
    resumed.extend(execution("s1.1:0", "alice", 80 + after, Some(2)).split_off(4));
    let callers = request("c0.0", "alice", 0, &answer("s1.1:0", "alice"), false);
    front_run(vec![("s0.1", failed), ("s1.1", resumed)], callers)
}

#[test]
fn a_key_run_again_within_the_lease_of_a_failed_service_is_found() {
    assert_eq!(
        classes(&failed_then_resumed(30_000)),
        [Class::KeyReleasedEarly]
    );
    assert_eq!(classes(&failed_then_resumed(LEASE)), []);
}

#[test]
fn a_failed_service_whose_server_was_stopped_past_its_lease_may_lose_its_key() {
    let mut front = failed_then_resumed(30_000);
    front.run.faults.push(FaultRecord {
        kind: "stop",
        process: "s0.1".into(),
        start: 50,
        end: 70,
    });
    assert_eq!(classes(&front), []);
}

#[test]
fn an_order_charged_twice_downstream_is_found() {
    let charge = |call: &str| Charge {
        call: call.into(),
        order: format!("alice/{KEY}"),
        key: "downstream-key".into(),
        t: 5,
    };
    let mut front = front_run(Vec::new(), Vec::new());
    front.add_charges(vec![charge("downstream:0")]);
    assert_eq!(classes(&front), []);
    front.add_charges(vec![charge("downstream:1")]);
    assert_eq!(classes(&front), [Class::DownstreamEffectRepeated]);
}

/// A handler that reserved its key at 1 and began at `began`, whose service failed at
/// `ended` after its first step, and the execution that resumed its key at `next`; with
/// `slowed`, its server's link to the store was slow from the reservation until just before
/// the body.
fn failed_after_slow_reservation(began: u64, ended: u64, next: u64, slowed: bool) -> FrontRun {
    let mut failed = execution("s0.1:0", "alice", began - 10, Some(1));
    failed.truncate(4);
    failed.push(Event::BodyEnd {
        call: "s0.1:0".into(),
        lease_lost: false,
        t: ended,
    });
    failed.push(Event::Complete {
        call: "s0.1:0".into(),
        ending: Ending::Error {
            class: "ServiceError".into(),
            message: String::new(),
        },
        t: ended,
    });
    // The resumed execution replays the failed one's recorded charge and ships.
    let mut resumed = execution("s1.1:0", "alice", next - 10, Some(next));
    resumed.drain(2..4);
    let callers = request("c0.0", "alice", 0, &answer("s1.1:0", "alice"), false);
    let mut front = front_run(vec![("s0.1", failed), ("s1.1", resumed)], callers);
    if slowed {
        front.run.faults.push(FaultRecord {
            kind: "net-latency",
            process: "s0.1".into(),
            start: 0,
            end: began - 1,
        });
    }
    front
}

#[test]
fn a_lease_spent_by_a_slow_store_link_before_the_body_is_not_a_key_released_early() {
    // The reservation's lease ran out before the body began; the engine's renewal then came
    // late, so the failed service held the key only a little past its end.
    let (began, ended, next) = (1_335_000, 1_667_000, 1_723_000);
    assert_eq!(
        classes(&failed_after_slow_reservation(began, ended, next, false)),
        [Class::KeyReleasedEarly]
    );
    assert_eq!(
        classes(&failed_after_slow_reservation(began, ended, next, true)),
        []
    );
}

#[test]
fn a_slow_store_link_does_not_excuse_a_key_released_within_the_reservations_lease() {
    let (began, ended, next) = (300_000, 400_000, 600_000);
    assert_eq!(
        classes(&failed_after_slow_reservation(began, ended, next, true)),
        [Class::KeyReleasedEarly]
    );
}
