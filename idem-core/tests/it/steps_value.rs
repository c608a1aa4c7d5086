//! `Steps`, the value a record keeps of a call's finished steps: what it lists, counts and holds.

use std::time::Duration;

use idem_core::store::{Steps, Timestamp};

fn two_steps() -> Steps {
    Steps::new()
        .with_step("ledger", br#"7"#.to_vec())
        .with_step("charge", br#""ch_1""#.to_vec())
}

#[test]
fn the_steps_are_listed_by_name_with_their_values() {
    let steps = two_steps();
    let listed: Vec<(&str, &[u8])> = steps.iter().collect();
    assert_eq!(
        listed,
        [("charge", &br#""ch_1""#[..]), ("ledger", &b"7"[..])],
        "every recorded step, in name order, with its value"
    );
    assert_eq!(Steps::new().iter().count(), 0);
}

#[test]
fn the_count_is_the_number_of_names() {
    assert_eq!(Steps::new().len(), 0);
    assert!(Steps::new().is_empty());
    let steps = two_steps();
    assert_eq!(steps.len(), 2);
    assert!(!steps.is_empty());
    let replaced = steps.with_step("charge", br#""ch_2""#.to_vec());
    assert_eq!(
        replaced.len(),
        2,
        "a name recorded again replaces its value"
    );
    assert_eq!(replaced.get("charge"), Some(&br#""ch_2""#[..]));
}

#[test]
fn steps_hold_the_key_until_the_instant_they_expire() {
    let until = Timestamp::from_millis(1_700_000_000_000);
    let steps = two_steps().with_kept_until(until);
    assert!(steps.hold_key(until - Duration::from_millis(1)));
    assert!(
        !steps.hold_key(until),
        "at its expiry a record is gone, on every store; its steps with it"
    );
    assert!(
        !Steps::new()
            .with_kept_until(until)
            .hold_key(Timestamp::from_millis(0)),
        "no step, no hold"
    );
}

#[test]
fn keeping_longer_never_shortens() {
    let until = Timestamp::from_millis(1_700_000_000_000);
    let mut steps = two_steps().with_kept_until(until);
    steps.keep_until(until - Duration::from_secs(60));
    assert_eq!(steps.kept_until(), until);
    steps.keep_until(until + Duration::from_secs(60));
    assert_eq!(steps.kept_until(), until + Duration::from_secs(60));
}
