//! A "not recorded" for an outcome the store holds is a false alarm: listed apart from the
//! anomalies with its key, and named in the report with the fault around it.

use idem_certify::check::check;
use idem_certify::check::model::FaultRecord;
use idem_certify::history::{Ending, Op};
use idem_certify::report::{Report, Setup};

use crate::support::{complete, ran, run_of};

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
