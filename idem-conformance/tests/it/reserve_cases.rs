//! The table of reserve cases against idem-core's judgement, and against the reference store.

use std::collections::HashSet;
use std::sync::Arc;

use idem_conformance::{check_reserve_cases, reserve_cases, ReferenceStore};
use idem_core::store::{judge_reserve, ReserveJudgement};

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
