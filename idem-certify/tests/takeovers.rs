//! The checker's rules of a takeover, on hand-written histories: a stall is taken over only
//! once its lease passed, a takeover's fencing token is above the owner's, and a stale owner
//! acts only while it could not know and is told its outcome did not count.

mod support;

use idem_certify::check::model::{FaultRecord, Run};
use idem_certify::check::Class;
use idem_certify::history::{Ending, Event, Op};
use support::{classes, complete, effect, ran, run_of};

/// The lease of these runs, and how late news of a takeover may come.
const LEASE: u64 = 1_000;
const TOLD_WITHIN: u64 = 50;

/// `a`'s first step under token 1, from 0; then nothing more (a stall, a stop, a hang).
fn owner(op: Op) -> Vec<Event> {
    let mut events = ran("a", 0, 1, op);
    events.truncate(4);
    events
}

/// `b` takes the key over at `t` with `fencing` (attempt 2), finds `charge` recorded, ships
/// and answers.
fn taker(t: u64, fencing: u64) -> Vec<Event> {
    let mut events = ran("b", t - 10, fencing, Op::Contend);
    events.remove(2);
    if let Event::Body { attempt, .. } = &mut events[1] {
        *attempt = 2;
    }
    events
}

fn run(histories: Vec<(&str, Vec<Event>)>) -> Run {
    let mut run = run_of(histories, Some("b"));
    run.lease = LEASE;
    run.told_within = TOLD_WITHIN;
    run
}

fn stopped(run: &mut Run, start: u64, end: u64) {
    run.faults.push(FaultRecord {
        kind: "stop",
        process: "w0.1".into(),
        start,
        end,
    });
}

#[test]
fn a_stall_is_taken_over_only_once_its_lease_passed() {
    let early = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(400, 2))]);
    assert!(classes(&early).contains(&Class::ConcurrentBodies));
    let late = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(2_000, 2))]);
    assert_eq!(classes(&late), []);
}

#[test]
fn a_takeover_whose_token_is_not_above_the_owners_is_an_anomaly() {
    let kept = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(2_000, 1))]);
    let findings = idem_certify::check::check(&kept);
    assert_eq!(classes(&kept), [Class::FencingTokenRegressed]);
    assert!(
        findings.fencing_regressions.is_empty(),
        "not an allowed one"
    );
}

/// `a` (renewing, token 1) is stopped from 50 to 3 000; `b` takes over at 2 000. `a` ships at
/// `shipped` and ends with `ending`.
fn resumed(shipped: u64, ending: Ending, told_at: Option<u64>) -> Run {
    let mut events = owner(Op::Slow);
    if let Some(t) = told_at {
        events.push(Event::LeaseLost {
            call: "a".into(),
            t,
        });
    }
    events.push(effect("a", "ship", 1, shipped));
    events.push(Event::BodyEnd {
        call: "a".into(),
        lease_lost: false,
        t: shipped + 10,
    });
    events.push(complete("a", ending, shipped + 20));
    let mut run = run(vec![("w0.1", events), ("w1.1", taker(2_000, 2))]);
    stopped(&mut run, 50, 3_000);
    run
}

fn ended(class: &str) -> Ending {
    Ending::Error {
        class: class.into(),
        message: String::new(),
    }
}

#[test]
fn a_stale_owner_may_act_only_while_it_could_not_know() {
    // Frozen between its look at the lease and its effect: acts the instant it resumes.
    let at_once = resumed(3_010, ended("NotRecorded"), None);
    assert_eq!(classes(&at_once), []);
    // Half a lease after it resumed, with its clock saying the lease had passed.
    let later = resumed(3_500, ended("NotRecorded"), None);
    assert_eq!(classes(&later), [Class::StaleOwnerNotTold]);
}

#[test]
fn a_stale_owner_must_be_told_its_outcome_did_not_count() {
    let untold = resumed(3_010, ended("Store"), None);
    assert_eq!(classes(&untold), [Class::StaleOwnerNotTold]);
    let told = resumed(3_010, ended("Store"), Some(3_005));
    assert_eq!(classes(&told), []);
}

#[test]
fn a_step_a_stale_owner_performed_after_the_takeover_must_not_be_recorded() {
    // `a` never looks at its lease: it ships at 2 500, after `b` took over at 2 000. The store
    // must refuse the step's write; had it accepted, `a` would have seen `ship` done.
    let heedless = |recorded: bool| {
        let mut events = owner(Op::Heedless);
        events.push(effect("a", "ship", 1, 2_500));
        if recorded {
            events.push(Event::StepDone {
                call: "a".into(),
                step: "ship".into(),
                t: 2_510,
            });
        }
        events.push(complete("a", ended("NotRecorded"), 2_520));
        run(vec![("w0.1", events), ("w1.1", taker(2_000, 2))])
    };
    assert_eq!(classes(&heedless(false)), []);
    assert_eq!(classes(&heedless(true)), [Class::StaleWriteAccepted]);
}

#[test]
fn an_owner_whose_body_began_late_is_judged_in_the_order_of_reservation() {
    // `a` reserved first (token 1, attempt 1) and was stopped before its body began; `b` took
    // the key over (token 2, attempt 2) at 2 000, and `a`'s body began at 2 600, on waking.
    let mut late = owner(Op::StallAtEnd);
    if let Event::Body { t, .. } = &mut late[1] {
        *t = 2_600;
    }
    late.truncate(2);
    late.push(Event::LeaseLost {
        call: "a".into(),
        t: 2_601,
    });
    let mut run = run(vec![("w0.1", late), ("w1.1", taker(2_000, 2))]);
    stopped(&mut run, 5, 2_590);
    assert_eq!(classes(&run), []);
    let regressions = idem_certify::check::check(&run).fencing_regressions;
    assert!(regressions.is_empty(), "{regressions:?}");
}

#[test]
fn a_takeover_is_judged_against_the_body_it_took_over() {
    // `c` (token 9, attempt 1, a clock ahead) reserved, failed and released; `a` reserved
    // afresh with the lower token its clock proposed (allowed); `b` took over `a`'s record.
    let mut released = ran("c", 0, 9, Op::Fail);
    released.truncate(2);
    released.push(Event::BodyEnd {
        call: "c".into(),
        lease_lost: false,
        t: 20,
    });
    released.push(complete("c", ended("Failed"), 30));
    let mut fresh = owner(Op::Stall);
    for event in &mut fresh {
        match event {
            Event::Invoke { t, .. }
            | Event::Body { t, .. }
            | Event::Effect { t, .. }
            | Event::StepDone { t, .. } => *t += 100,
            _ => {}
        }
    }
    let histories = |taker_token| {
        vec![
            ("w2.1", released.clone()),
            ("w0.1", fresh.clone()),
            ("w1.1", taker(2_000, taker_token)),
        ]
    };
    let clean = run(histories(2));
    let findings = idem_certify::check::check(&clean);
    assert_eq!(classes(&clean), []);
    assert_eq!(
        findings.fencing_regressions.len(),
        1,
        "a's token, below c's"
    );
    let kept = run(histories(1));
    assert_eq!(classes(&kept), [Class::FencingTokenRegressed]);
}
