//! Fencing tokens (`FencingTokenRegressed`): a takeover's token is above that of the body it
//! took over, judged in the order of reservation; the regressions the design allows (a fresh
//! reservation after a release) are listed apart.

use idem_certify::check::{check, Class};
use idem_certify::history::{Ending, Event, Op};

use crate::support::takeover::{ended, owner, run, stopped, taker};
use crate::support::{classes, complete, ran, run_of, KEY, PAYLOAD};

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
fn a_takeover_whose_token_is_not_above_the_owners_is_an_anomaly() {
    let kept = run(vec![("w0.1", owner(Op::Stall)), ("w1.1", taker(2_000, 1))]);
    let findings = idem_certify::check::check(&kept);
    assert_eq!(classes(&kept), [Class::FencingTokenRegressed]);
    assert!(
        findings.fencing_regressions.is_empty(),
        "not an allowed one"
    );
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
