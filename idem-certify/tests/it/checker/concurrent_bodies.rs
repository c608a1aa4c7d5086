//! Two bodies of one key at once (`ConcurrentBodies`): found while the first owner's lease is
//! live and nothing told it otherwise; allowed after a kill, a stall past its lease, or once
//! the engine told the owner its lease was lost.

use idem_certify::check::model::FaultRecord;
use idem_certify::check::Class;
use idem_certify::history::{Event, Op};

use crate::support::takeover::{owner, run, taker};
use crate::support::{classes, ran, run_of};

#[test]
fn two_bodies_at_once_with_no_lease_lost_are_found() {
    let mut events = ran("a", 0, 1, Op::Contend);
    events.extend(ran("b", 5, 2, Op::Contend));
    let run = run_of(vec![("w0.1", events)], Some("a"));
    let found = classes(&run);
    for class in [
        Class::ConcurrentBodies,
        Class::DuplicateEffect,
        Class::TwoAnswers,
        Class::StaleWriteAccepted,
    ] {
        assert!(found.contains(&class), "{class:?} in {found:?}");
    }
}

#[test]
fn a_killed_owner_may_be_taken_over_while_its_body_has_not_returned() {
    let mut killed = ran("a", 0, 1, Op::Contend);
    killed.truncate(3); // invoked, body, charge: then the kill
    let mut run = run_of(
        vec![("w0.1", killed), ("w1.1", ran("b", 100, 2, Op::Contend))],
        Some("b"),
    );
    assert!(
        !classes(&run).is_empty(),
        "without the kill, a's body never returned"
    );
    run.faults.push(FaultRecord {
        kind: "kill",
        process: "w0.1".into(),
        start: 25,
        end: 25,
    });
    assert_eq!(classes(&run), []);
}

#[test]
fn a_stall_is_taken_over_only_once_its_lease_passed() {
    let early = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(400, 2))]);
    assert!(classes(&early).contains(&Class::ConcurrentBodies));
    let late = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(2_000, 2))]);
    assert_eq!(classes(&late), []);
}

#[test]
fn a_takeover_is_allowed_once_the_engine_told_the_owner_its_lease_was_lost() {
    // `a` hangs in its first step's write; `b` takes the key over at 100.
    let mut hung = ran("a", 0, 1, Op::Contend);
    hung.truncate(3);
    let told = |t: u64| Event::LeaseLost {
        call: "a".into(),
        t,
    };
    let taker = ran("b", 100, 2, Op::Contend);

    let untold = run_of(
        vec![("w0.1", hung.clone()), ("w1.1", taker.clone())],
        Some("b"),
    );
    let found = classes(&untold);
    assert!(found.contains(&Class::ConcurrentBodies), "{found:?}");
    assert!(found.contains(&Class::DuplicateEffect), "{found:?}");

    let mut told_late = hung.clone();
    told_late.push(told(500));
    let late = run_of(
        vec![("w0.1", told_late), ("w1.1", taker.clone())],
        Some("b"),
    );
    assert!(!classes(&late).is_empty(), "told only after the takeover");

    let mut told_first = hung;
    told_first.push(told(90));
    let run = run_of(vec![("w0.1", told_first), ("w1.1", taker)], Some("b"));
    assert_eq!(classes(&run), []);
}

#[test]
fn the_older_owner_is_the_one_with_the_lower_token_whenever_its_body_began() {
    // `a` reserved first (token 1) but its answer came late: its body began after `b`'s,
    // which took the key over (token 2). Whether the overlap is allowed is `a`'s to answer.
    let late = |op: Op| {
        let mut events = ran("a", 0, 1, op);
        events.truncate(3);
        if let Event::Body { t, .. } = &mut events[1] {
            *t = 120;
        }
        if let Event::Effect { t, .. } = &mut events[2] {
            *t = 125;
        }
        events
    };
    let taker = ran("b", 100, 2, Op::Contend);
    let stalled = run_of(
        vec![("w0.1", late(Op::StallAtEnd)), ("w1.1", taker.clone())],
        Some("b"),
    );
    assert!(
        !classes(&stalled).contains(&Class::ConcurrentBodies),
        "a stalled owner's late body"
    );
    let renewed = run_of(
        vec![("w0.1", late(Op::Contend)), ("w1.1", taker)],
        Some("b"),
    );
    assert!(classes(&renewed).contains(&Class::ConcurrentBodies));
}
