//! A step the record held runs no more (`RecordedStepRepeated`): a takeover after a stall is
//! allowed, and resumes after the steps recorded.

use idem_certify::check::Class;
use idem_certify::history::{Event, Op};

use crate::support::{classes, complete, effect, fresh, run_of, KEY, PAYLOAD};

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
