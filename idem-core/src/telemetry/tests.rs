//! The question telemetry asks before it reads a clock: does a recorder keep what it records?

use metrics_util::debugging::{DebugValue, DebuggingRecorder};

use super::{histogram, listens, METADATA};

fn probe_key() -> metrics::Key {
    metrics::Key::from_name("idem_probe_test_seconds")
}

#[test]
fn nothing_listens_without_a_recorder() {
    assert!(!listens(&histogram(&probe_key())));
}

#[test]
fn a_recorder_listens_and_the_question_records_no_value() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        assert!(listens(&histogram(&probe_key())));
    });
    let values: Vec<_> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key() == &probe_key())
        .map(|(.., value)| value)
        .collect();
    assert!(
        matches!(values.as_slice(), [DebugValue::Histogram(recorded)] if recorded.is_empty()),
        "the histogram is registered with no value: {values:?}"
    );
}

#[test]
fn a_duration_is_read_when_the_recorder_asks_for_it() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // A second ago, so that the value read is known to be at least that.
    let second = std::time::Duration::from_secs(1);
    let started = std::time::Instant::now()
        .checked_sub(second)
        .expect("a clock past its first second");
    metrics::with_local_recorder(&recorder, || {
        metrics::with_recorder(|recorder| recorder.register_histogram(&probe_key(), &METADATA))
            .record(super::Elapsed(started));
    });
    let recorded = snapshotter.snapshot().into_vec();
    assert!(
        matches!(recorded.as_slice(), [(.., DebugValue::Histogram(values))] if values.len() == 1 && values[0].into_inner() >= 1.0),
        "{recorded:?}"
    );
}
