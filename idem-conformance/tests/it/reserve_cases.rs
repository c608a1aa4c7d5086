//! The table of reserve cases against idem-core's judgement, and against the reference store.

use std::collections::HashSet;
use std::sync::Arc;

use idem_conformance::{check_reserve_cases, reserve_cases, ReferenceStore};
use idem_core::store::{judge_reserve, Lookup, Record, ReserveJudgement, Store};
use idem_core::Idempotency;

#[test]
fn the_judgement_decides_every_case_of_the_table() {
    for case in reserve_cases() {
        assert_eq!(
            judge_reserve(case.found().cloned(), case.claim()),
            *case.expected(),
            "case `{}`",
            case.name()
        );
    }
}

/// Every verdict is in the table, and no two cases share a name (a key is made from it).
#[test]
fn the_table_covers_every_verdict_under_distinct_names() {
    let cases = reserve_cases();
    let names: HashSet<_> = cases.iter().map(|case| case.name()).collect();
    assert_eq!(names.len(), cases.len());
    let covered = |verdict: fn(&ReserveJudgement) -> bool| {
        cases.iter().filter(|case| verdict(case.expected())).count()
    };
    assert_eq!(covered(|v| matches!(v, ReserveJudgement::Vacant)), 1);
    assert!(covered(|v| matches!(v, ReserveJudgement::Expired(_))) >= 2);
    assert!(covered(|v| matches!(v, ReserveJudgement::Held(_))) >= 2);
    assert!(covered(|v| matches!(v, ReserveJudgement::TakeOver(_))) >= 5);
    assert!(covered(|v| matches!(v, ReserveJudgement::Existing(_))) >= 5);
}

#[tokio::test]
async fn the_reference_store_decides_every_case_of_the_table() {
    check_reserve_cases(Arc::new(ReferenceStore::new())).await;
}

/// The lookup column answers a record exactly where the judgement is a completed record that
/// stands: live at the claim's time, of the claim's call or of another (a mismatch).
#[test]
fn the_lookup_column_answers_exactly_the_completed_records_that_stand() {
    let mut answered = 0;
    for case in reserve_cases() {
        let name = case.name();
        match (case.expected_lookup(), case.expected()) {
            (Lookup::Completed(looked), ReserveJudgement::Existing(Record::Completed(stands))) => {
                assert_eq!(&looked, stands, "case `{name}`");
                assert!(case.claim().now() < looked.expires_at(), "case `{name}`");
                answered += 1;
            }
            (Lookup::Miss, judged) => assert!(
                !matches!(judged, ReserveJudgement::Existing(Record::Completed(_))),
                "case `{name}`"
            ),
            (looked, judged) => panic!("case `{name}`: {looked:?} for {judged:?}"),
        }
    }
    assert!(answered >= 3, "{answered} cases answer a lookup");
}

/// The reference store looks records up: it answers every case's lookup exactly as the
/// column says, where the shared check allows a store to miss.
#[tokio::test]
async fn the_reference_store_answers_every_lookup_of_the_table() {
    let store = ReferenceStore::new();
    let handle = Idempotency::new(ReferenceStore::new()).with_namespace("lookup-column");
    for case in reserve_cases() {
        let key = handle.key(case.name()).finish().unwrap();
        case.plant(&store, &key).await;
        assert_eq!(
            store.lookup(&key, &case.probe()).unwrap(),
            case.expected_lookup(),
            "case `{}`",
            case.name()
        );
    }
}
