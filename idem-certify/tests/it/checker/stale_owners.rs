//! A stale owner, whose key was taken over while its body ran, acts only while it could not
//! know, and is told its outcome did not count (`StaleOwnerNotTold`).

use idem_certify::check::model::Run;
use idem_certify::check::Class;
use idem_certify::history::{Ending, Event, Op};

use crate::support::takeover::{ended, owner, run, stopped, taker};
use crate::support::{classes, complete, effect};

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
