//! The checker on hand-written histories: each class found where the contract breaks, and
//! nothing found where a takeover is allowed.

mod support;

use idem_certify::check::model::FaultRecord;
use idem_certify::check::{check, Class};
use idem_certify::history::{Ending, Event, Op};
use idem_certify::report::{Report, Setup};
use support::{answer, classes, complete, effect, fresh, ran, run_of, KEY, PAYLOAD};

#[test]
fn one_run_and_its_replays_are_clean() {
    let mut second = vec![Event::Invoke {
        call: "b".into(),
        key: KEY.into(),
        payload: PAYLOAD.into(),
        op: Op::Retry,
        t: 200,
    }];
    second.push(complete(
        "b",
        Ending::Ok {
            answer: answer("a"),
            replayed: true,
        },
        210,
    ));
    let run = run_of(
        vec![("w0.1", ran("a", 0, 1, Op::Contend)), ("w1.1", second)],
        Some("a"),
    );
    assert_eq!(classes(&run), []);
}

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
fn a_takeover_after_a_stall_is_allowed_but_not_a_repeat_of_a_recorded_step() {
    // `a` stalls after recording `charge`; `b` takes over and must resume after it.
    let stalled = vec![
        Event::Invoke {
            call: "a".into(),
            key: KEY.into(),
            payload: PAYLOAD.into(),
            op: Op::Stall,
            t: 0,
        },
        Event::Body {
            call: "a".into(),
            attempt: 1,
            fencing: 1,
            t: 10,
        },
        effect("a", "charge", 1, 20),
        Event::StepDone {
            call: "a".into(),
            step: "charge".into(),
            t: 30,
        },
    ];
    let resumed = vec![
        Event::Invoke {
            call: "b".into(),
            key: KEY.into(),
            payload: PAYLOAD.into(),
            op: Op::Contend,
            t: 100,
        },
        Event::Body {
            call: "b".into(),
            attempt: 2,
            fencing: 2,
            t: 110,
        },
        effect("b", "ship", 2, 120),
        complete("b", fresh("b"), 130),
    ];
    let clean = run_of(
        vec![("w0.1", stalled.clone()), ("w1.1", resumed.clone())],
        Some("b"),
    );
    assert_eq!(classes(&clean), [], "a takeover after a stall");

    let mut repeated = resumed;
    repeated.insert(2, effect("b", "charge", 2, 115));
    let run = run_of(vec![("w0.1", stalled), ("w1.1", repeated)], Some("b"));
    assert_eq!(classes(&run), [Class::RecordedStepRepeated]);
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
fn a_stale_owners_outcome_accepted_after_a_takeover_is_found() {
    let mut stale = ran("a", 0, 1, Op::StallAtEnd);
    let ending = stale.pop().unwrap();
    let Event::Complete { call, ending, .. } = ending else {
        unreachable!()
    };
    stale.push(Event::Complete {
        call,
        ending,
        t: 300,
    });
    let mut successor = ran("b", 100, 2, Op::Contend);
    successor.pop();
    successor.push(complete(
        "b",
        Ending::Error {
            class: "NotRecorded".into(),
            message: String::new(),
        },
        400,
    ));
    let run = run_of(vec![("w0.1", stale), ("w1.1", successor)], Some("a"));
    assert!(classes(&run).contains(&Class::StaleWriteAccepted));
}

#[test]
fn an_answer_for_other_arguments_and_a_lost_completion_are_found() {
    let mut events = ran("a", 0, 1, Op::Contend);
    events.push(Event::Invoke {
        call: "m".into(),
        key: KEY.into(),
        payload: "other".into(),
        op: Op::Mismatch,
        t: 200,
    });
    events.push(complete(
        "m",
        Ending::Ok {
            answer: answer("a"),
            replayed: true,
        },
        210,
    ));
    let run = run_of(vec![("w0.1", events)], None);
    let found = classes(&run);
    assert!(found.contains(&Class::AnswerForOtherArguments), "{found:?}");
    assert!(found.contains(&Class::LostCompletion), "{found:?}");
}

#[test]
fn not_recorded_for_an_outcome_the_store_holds_is_a_false_alarm() {
    let mut events = ran("a", 0, 1, Op::Contend);
    events.pop();
    events.push(complete(
        "a",
        Ending::Error {
            class: "NotRecorded".into(),
            message: String::new(),
        },
        70,
    ));
    let mut run = run_of(vec![("w0.1", events)], Some("a"));
    run.faults.push(FaultRecord {
        kind: "stop",
        process: "w0.1".into(),
        start: 10,
        end: 20,
    });
    let findings = check(&run);
    let named: Vec<&str> = findings
        .false_alarms
        .iter()
        .map(|alarm| alarm.call.as_str())
        .collect();
    assert_eq!(named, ["a"]);
    assert!(findings
        .false_alarms
        .iter()
        .all(|alarm| !alarm.key.is_empty()));
    assert!(findings.anomalies.is_empty());

    // The report names it, with its key and the fault around it.
    let setup = Setup {
        store: "memory".into(),
        broken: None,
        seconds: 1,
        workers: 1,
        faults: vec!["stop".into()],
        lease_ms: 1_000,
        seed: 1,
        clock_offsets_ms: Vec::new(),
    };
    let report = Report::new(setup, &run, &findings);
    assert_eq!(report.false_alarms, 1);
    let alarm = &report.false_alarm_list[0];
    assert_eq!(alarm.call.id, "a");
    assert_eq!(alarm.faults.len(), 1, "{:?}", alarm.faults);
    let dir = std::env::temp_dir().join(format!("idem-certify-alarm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    report.write(&dir).unwrap();
    let page = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        page.contains(&format!("call `a` on key `{}`", alarm.call.key)),
        "{page}"
    );
    assert!(page.contains("stop on w0.1 at 10"), "{page}");
}

#[test]
fn a_reservation_that_lands_after_a_release_is_no_takeover_but_its_lower_token_is_reported() {
    // `b` reserves, fails and releases while `a`'s reservation, proposed earlier with a lower
    // token, is still on its way; `a` then runs alone.
    let failed = vec![
        Event::Invoke {
            call: "b".into(),
            key: KEY.into(),
            payload: PAYLOAD.into(),
            op: Op::Fail,
            t: 40,
        },
        Event::Body {
            call: "b".into(),
            attempt: 1,
            fencing: 40,
            t: 42,
        },
        Event::BodyEnd {
            call: "b".into(),
            lease_lost: false,
            t: 43,
        },
        complete(
            "b",
            Ending::Error {
                class: "Failed".into(),
                message: String::new(),
            },
            50,
        ),
    ];
    let mut late = ran("a", 0, 1, Op::Contend);
    if let Event::Body { t, .. } = &mut late[1] {
        *t = 60;
    }
    for event in &mut late[2..] {
        match event {
            Event::Effect { t, .. }
            | Event::StepDone { t, .. }
            | Event::BodyEnd { t, .. }
            | Event::Complete { t, .. } => *t += 60,
            _ => {}
        }
    }
    let run = run_of(vec![("w0.1", late), ("w1.1", failed)], Some("a"));
    let findings = check(&run);
    assert!(findings.anomalies.is_empty(), "{:?}", findings.anomalies);
    assert_eq!(findings.fencing_regressions.len(), 1);
    assert_eq!(
        findings.fencing_regressions[0].class,
        Class::FencingTokenRegressed
    );
}

#[test]
fn a_url_is_rewritten_to_go_through_a_proxy() {
    use idem_certify::proxies::through;
    assert_eq!(
        through("postgres://postgres@127.0.0.1:5432/db", "127.0.0.1:9"),
        Some((
            "postgres://postgres@127.0.0.1:9/db".to_owned(),
            "127.0.0.1:5432".to_owned()
        ))
    );
    assert_eq!(
        through("redis://127.0.0.1:6379/", "127.0.0.1:9").map(|(url, _)| url),
        Some("redis://127.0.0.1:9/".to_owned())
    );
    assert_eq!(
        through("http://127.0.0.1:5000", "127.0.0.1:9").map(|(url, _)| url),
        Some("http://127.0.0.1:9".to_owned())
    );
    assert_eq!(through("dynamodb://table", "127.0.0.1:9"), None);
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
