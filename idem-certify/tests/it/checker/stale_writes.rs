//! A stale owner's write never wins (`StaleWriteAccepted`): neither its outcome, accepted after
//! a takeover, nor a step it performed after the takeover, recorded.

use idem_certify::check::Class;
use idem_certify::history::{Ending, Event, Op};

use crate::support::takeover::{ended, owner, run, taker};
use crate::support::{classes, complete, effect, ran, run_of};

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
