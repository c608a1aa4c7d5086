//! The answers a key's callers get: a run and its replays are clean; an answer for other
//! arguments (`AnswerForOtherArguments`), and one the store no longer holds
//! (`LostCompletion`), are found.

use idem_certify::check::Class;
use idem_certify::history::{Ending, Event, Op};

use crate::support::{answer, classes, complete, ran, run_of, KEY, PAYLOAD};

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
