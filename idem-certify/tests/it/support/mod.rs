//! Hand-written histories for the checker's tests, and what the tests that run the command
//! share ([`command`]).
#![allow(dead_code)]

pub mod command;
pub mod takeover;

use idem_certify::check::model::{FinalRecord, Run};
use idem_certify::check::{check, Class};
use idem_certify::history::{Ending, Event, Op};

pub const KEY: &str = "k1";
pub const PAYLOAD: &str = "args-of-k1";

pub fn answer(call: &str) -> String {
    format!("{call}|{PAYLOAD}")
}

/// The events of a call that ran both steps from `t` under `fencing` and answered.
pub fn ran(call: &str, t: u64, fencing: u64, op: Op) -> Vec<Event> {
    vec![
        Event::Invoke {
            call: call.into(),
            key: KEY.into(),
            payload: PAYLOAD.into(),
            op,
            t,
        },
        Event::Body {
            call: call.into(),
            attempt: 1,
            fencing,
            t: t + 10,
        },
        effect(call, "charge", fencing, t + 20),
        Event::StepDone {
            call: call.into(),
            step: "charge".into(),
            t: t + 30,
        },
        effect(call, "ship", fencing, t + 40),
        Event::StepDone {
            call: call.into(),
            step: "ship".into(),
            t: t + 50,
        },
        Event::BodyEnd {
            call: call.into(),
            lease_lost: false,
            t: t + 60,
        },
        complete(call, fresh(call), t + 70),
    ]
}

pub fn effect(call: &str, step: &str, fencing: u64, t: u64) -> Event {
    Event::Effect {
        call: call.into(),
        key: KEY.into(),
        step: step.into(),
        fencing,
        t,
    }
}

pub fn fresh(call: &str) -> Ending {
    Ending::Ok {
        answer: answer(call),
        replayed: false,
    }
}

pub fn complete(call: &str, ending: Ending, t: u64) -> Event {
    Event::Complete {
        call: call.into(),
        ending,
        t,
    }
}

pub fn run_of(histories: Vec<(&str, Vec<Event>)>, stored: Option<&str>) -> Run {
    let mut run = Run {
        ended: 1_000_000,
        ..Run::default()
    };
    for (process, events) in histories {
        run.add_history(process, events);
    }
    run.finals.insert(
        KEY.into(),
        match stored {
            Some(call) => FinalRecord::Completed {
                answer: Some(answer(call)),
            },
            None => FinalRecord::Absent,
        },
    );
    run
}

pub fn classes(run: &Run) -> Vec<Class> {
    check(run).anomalies.iter().map(|a| a.class).collect()
}
