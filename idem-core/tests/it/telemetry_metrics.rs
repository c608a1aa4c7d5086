//! Every outcome of a call is counted under its function, with its duration; takeovers, the
//! replay cache and each store operation too.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use async_trait::async_trait;
use idem_conformance::{Intercepted, Interceptor, Operation, ReferenceStore};
use idem_core::{
    store::{Claim, InProgress, OwnerToken, Store},
    Call, Error, Fingerprint, Idempotency, Key, ManualClock, ReplayCache, ScopeQuota, StoreError,
};
use metrics::{SharedString, Unit};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::support::ok;

/// A recorder for this test's thread (each test runs on a current-thread runtime).
struct Recorded {
    snapshotter: Snapshotter,
    _guard: metrics::LocalRecorderGuard<'static>,
}

fn record() -> Recorded {
    let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
    Recorded {
        snapshotter: recorder.snapshotter(),
        _guard: metrics::set_default_local_recorder(recorder),
    }
}

impl Recorded {
    /// What was recorded so far; a snapshot drains it.
    fn seen(&self) -> Seen {
        Seen(self.snapshotter.snapshot().into_vec())
    }
}

struct Seen(Vec<(CompositeKey, Option<Unit>, Option<SharedString>, DebugValue)>);

impl Seen {
    fn values(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&DebugValue> {
        self.0
            .iter()
            .filter(|(key, ..)| {
                let key = key.key();
                let mut found: Vec<_> = key.labels().map(|l| (l.key(), l.value())).collect();
                found.sort_unstable();
                let mut wanted = labels.to_vec();
                wanted.sort_unstable();
                key.name() == name && found == wanted
            })
            .map(|(.., value)| value)
            .collect()
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.values(name, labels).as_slice() {
            [DebugValue::Counter(n)] => *n,
            [] => 0,
            other => panic!("{name} {labels:?}: {other:?}"),
        }
    }

    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> usize {
        match self.values(name, labels).as_slice() {
            [DebugValue::Histogram(samples)] => samples.len(),
            [] => 0,
            other => panic!("{name} {labels:?}: {other:?}"),
        }
    }

    /// The calls of `function` that ended with `outcome`, checked against their durations.
    fn calls(&self, function: &str, outcome: &str) -> u64 {
        let labels = [("function", function), ("outcome", outcome)];
        let calls = self.counter("idem_calls_total", &labels);
        let timed = self.samples("idem_call_duration_seconds", &labels);
        assert_eq!(
            calls as usize, timed,
            "{function} {outcome}: every call is timed"
        );
        calls
    }
}

fn call(idem: &Idempotency, function: &str, part: &str, amount: u32) -> Call {
    let key = idem.key(function).part(part).finish().unwrap();
    Call::new(key, Fingerprint::of(&amount).unwrap())
}

#[tokio::test]
async fn executed_replayed_mismatch_and_released_are_counted_by_function() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new());

    ok(&idem, call(&idem, "orders.create", "a", 1))
        .await
        .unwrap();
    ok(&idem, call(&idem, "orders.create", "a", 1))
        .await
        .unwrap();
    ok(&idem, call(&idem, "orders.create", "a", 1))
        .await
        .unwrap();
    let mismatch = ok(&idem, call(&idem, "orders.create", "a", 2)).await;
    assert!(matches!(mismatch, Err(Error::Mismatch { .. })));
    let released = idem
        .run(call(&idem, "orders.refund", "b", 1), async {
            Err::<u32, _>(Error::InvalidKey("declined".into()))
        })
        .await;
    assert!(released.is_err());

    let seen = recorded.seen();
    assert_eq!(seen.calls("orders.create", "executed"), 1);
    assert_eq!(seen.calls("orders.create", "replayed"), 2);
    assert_eq!(seen.calls("orders.create", "mismatch"), 1);
    assert_eq!(seen.calls("orders.refund", "released"), 1);
    assert_eq!(seen.calls("orders.refund", "executed"), 0);
}

#[derive(Debug, Serialize, Deserialize)]
enum PayError {
    Declined,
    Idem(String),
}

impl From<Error> for PayError {
    fn from(error: Error) -> Self {
        PayError::Idem(error.to_string())
    }
}

#[tokio::test]
async fn a_stored_error_is_counted_then_replayed() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new());
    for _ in 0..2 {
        let answer = idem
            .run_storing_errors(call(&idem, "charge", "c", 1), |_| true, async {
                Err::<u32, _>(PayError::Declined)
            })
            .await;
        assert!(matches!(answer, Err(PayError::Declined)));
    }
    let seen = recorded.seen();
    assert_eq!(seen.calls("charge", "stored_error"), 1);
    assert_eq!(seen.calls("charge", "replayed"), 1);
}

#[tokio::test]
async fn a_duplicate_in_flight_is_counted_in_progress_and_a_dropped_waiter_cancelled() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new());
    let (started, body_started) = oneshot::channel();
    let (finish, finished) = oneshot::channel::<()>();
    let owner = tokio::spawn({
        let idem = idem.clone();
        let call = call(&idem, "ship", "d", 1);
        async move {
            idem.run(call, async move {
                started.send(()).unwrap();
                finished.await.unwrap();
                Ok::<_, Error>(1u32)
            })
            .await
        }
    });
    body_started.await.unwrap();

    let duplicate = ok(&idem, call(&idem, "ship", "d", 1)).await;
    assert!(matches!(duplicate, Err(Error::InProgress { .. })));
    let waiter = ok(
        &idem,
        call(&idem, "ship", "d", 1).with_wait(Duration::from_secs(60)),
    );
    let mut waiter = Box::pin(waiter);
    let polled = std::future::poll_fn(|cx| Poll::Ready(waiter.as_mut().poll(cx).is_pending()));
    assert!(polled.await, "the waiter waits for the owner");
    drop(waiter);

    finish.send(()).unwrap();
    owner.await.unwrap().unwrap();
    let seen = recorded.seen();
    assert_eq!(seen.calls("ship", "in_progress"), 1);
    assert_eq!(seen.calls("ship", "cancelled"), 1);
    assert_eq!(seen.calls("ship", "executed"), 1);
}

#[tokio::test]
async fn a_panicking_body_is_counted_aborted() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new());
    let call = call(&idem, "explode", "e", 1);
    let panicked = tokio::spawn({
        let idem = idem.clone();
        async move {
            idem.run(call, async { panic!("boom") as Result<u32, Error> })
                .await
        }
    })
    .await;
    assert!(panicked.unwrap_err().is_panic());
    let seen = recorded.seen();
    assert_eq!(seen.calls("explode", "aborted"), 1);
}

/// Refuses what a test says, passes the rest to a reference store.
struct Failing {
    inner: ReferenceStore,
    refuse: Operation,
    error: fn() -> StoreError,
}

#[async_trait]
impl Interceptor for Failing {
    fn inner(&self) -> &dyn Store {
        &self.inner
    }

    async fn before(&self, operation: Operation, _: &Key) -> Result<(), StoreError> {
        if operation == self.refuse {
            return Err((self.error)());
        }
        Ok(())
    }
}

fn failing(refuse: Operation, error: fn() -> StoreError) -> Idempotency {
    Idempotency::new(Intercepted(Failing {
        inner: ReferenceStore::new(),
        refuse,
        error,
    }))
}

#[tokio::test]
async fn store_failures_before_and_after_the_body_are_told_apart() {
    let recorded = record();
    let down = failing(Operation::Reserve, || {
        StoreError::backend("connection refused")
    });
    let unavailable = ok(&down, call(&down, "book", "f", 1)).await;
    assert!(matches!(unavailable, Err(Error::Store { .. })));
    let refusing = failing(Operation::Complete, || StoreError::rejected("too large"));
    let lost = ok(&refusing, call(&refusing, "book", "g", 1)).await;
    assert!(lost.unwrap_err().ran_without_record());

    let seen = recorded.seen();
    assert_eq!(seen.calls("book", "store_unavailable"), 1);
    assert_eq!(seen.calls("book", "not_recorded"), 1);
    assert_eq!(seen.calls("book", "executed"), 0);
}

#[tokio::test]
async fn quota_corrupt_and_codec_failures_have_their_outcomes() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new()).with_quota(ScopeQuota::new().max_records(1));
    ok(&idem, call(&idem, "quote", "h", 1)).await.unwrap();
    let over = ok(&idem, call(&idem, "quote", "i", 1)).await;
    assert!(matches!(over, Err(Error::QuotaExceeded { .. })));
    let too_big = ok(&idem, call(&idem, "quote", "h", 1).with_max_outcome(0)).await;
    assert!(matches!(too_big, Err(Error::CorruptRecord { .. })));
    let wrong_type = idem
        .run(call(&idem, "quote", "h", 1), async {
            Ok::<_, Error>("text".to_owned())
        })
        .await;
    assert!(matches!(wrong_type, Err(Error::Codec(_))));

    let seen = recorded.seen();
    assert_eq!(seen.calls("quote", "executed"), 1);
    assert_eq!(seen.calls("quote", "quota_exceeded"), 1);
    assert_eq!(seen.calls("quote", "corrupt"), 1);
    assert_eq!(seen.calls("quote", "failed"), 1);
}

#[tokio::test]
async fn a_takeover_is_counted() {
    let recorded = record();
    let clock = ManualClock::new();
    let store = Arc::new(ReferenceStore::new());
    let idem = Idempotency::from_arc(store.clone()).with_clock(clock.clone());
    let taken = call(&idem, "settle", "j", 1);
    let now = idem.clock().now();
    let stale = InProgress::new(
        OwnerToken::generate(),
        *taken.fingerprint().unwrap(),
        now + Duration::from_secs(1),
    );
    store
        .reserve(taken.key(), &Claim::new(stale, now))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(2));

    ok(&idem, taken).await.unwrap();
    let seen = recorded.seen();
    assert_eq!(
        seen.counter("idem_takeovers_total", &[("function", "settle")]),
        1
    );
    assert_eq!(seen.calls("settle", "executed"), 1);
}

#[tokio::test]
async fn the_replay_cache_counts_hits_and_misses() {
    let recorded = record();
    let idem =
        Idempotency::new(ReferenceStore::new()).with_replay_cache(ReplayCache::new(100, 1 << 20));
    for _ in 0..3 {
        ok(&idem, call(&idem, "cached", "k", 1)).await.unwrap();
    }
    let function = [("function", "cached")];
    let seen = recorded.seen();
    assert_eq!(seen.counter("idem_replay_cache_misses_total", &function), 1);
    assert_eq!(seen.counter("idem_replay_cache_hits_total", &function), 2);
}

#[tokio::test]
async fn each_store_operation_is_timed_under_the_stores_name() {
    let recorded = record();
    let idem = Idempotency::new(ReferenceStore::new());
    let key = call(&idem, "timed", "l", 1);
    ok(&idem, key.clone()).await.unwrap();
    // A replay, which the reference store's lookup answers: nothing reserved.
    ok(&idem, key.clone()).await.unwrap();
    idem.forget(key.key()).await.unwrap();

    let seen = recorded.seen();
    let samples = |operation| {
        seen.samples(
            "idem_store_duration_seconds",
            &[("store", "custom"), ("operation", operation)],
        )
    };
    assert_eq!(samples("lookup"), 2);
    assert_eq!(samples("reserve"), 1);
    assert_eq!(samples("complete"), 1);
    assert_eq!(samples("delete"), 1);
    assert_eq!(samples("release"), 0);
    let operations: Vec<&str> = idem_core::telemetry::STORE_OPERATIONS
        .into_iter()
        .filter(|operation| samples(operation) > 0)
        .collect();
    assert_eq!(operations, ["reserve", "complete", "delete", "lookup"]);
}

/// A store that passes every operation to the reference store but does not look up, as a
/// store across a network does not.
struct WithoutLookups(ReferenceStore);

impl Interceptor for WithoutLookups {
    fn inner(&self) -> &dyn Store {
        &self.0
    }
}

#[tokio::test]
async fn a_store_that_does_not_look_up_shows_no_lookups() {
    let recorded = record();
    let idem = Idempotency::new(Intercepted(WithoutLookups(ReferenceStore::new())));
    let key = call(&idem, "no lookups", "l", 1);
    ok(&idem, key.clone()).await.unwrap();
    // The replay, which the reservation answers.
    ok(&idem, key).await.unwrap();

    let seen = recorded.seen();
    let samples = |operation| {
        seen.samples(
            "idem_store_duration_seconds",
            &[("store", "custom"), ("operation", operation)],
        )
    };
    assert_eq!(samples("reserve"), 2);
    assert_eq!(samples("lookup"), 0);
}

#[tokio::test]
async fn a_handle_built_on_another_handles_store_times_each_operation_once() {
    let recorded = record();
    let first = Idempotency::new(ReferenceStore::new());
    let idem = Idempotency::from_arc(first.store().clone());
    let key = call(&idem, "timed once", "l", 1);
    ok(&idem, key).await.unwrap();

    let seen = recorded.seen();
    let samples = |operation| {
        seen.samples(
            "idem_store_duration_seconds",
            &[("store", "custom"), ("operation", operation)],
        )
    };
    assert_eq!(samples("lookup"), 1);
    assert_eq!(samples("reserve"), 1);
    assert_eq!(samples("complete"), 1);
}

/// A recorder that drops the store's operation times, as a filtering layer would.
struct WithoutStoreTimes(DebuggingRecorder);

impl metrics::Recorder for WithoutStoreTimes {
    fn describe_counter(&self, key: metrics::KeyName, unit: Option<Unit>, text: SharedString) {
        self.0.describe_counter(key, unit, text)
    }

    fn describe_gauge(&self, key: metrics::KeyName, unit: Option<Unit>, text: SharedString) {
        self.0.describe_gauge(key, unit, text)
    }

    fn describe_histogram(&self, key: metrics::KeyName, unit: Option<Unit>, text: SharedString) {
        self.0.describe_histogram(key, unit, text)
    }

    fn register_counter(&self, key: &metrics::Key, at: &metrics::Metadata<'_>) -> metrics::Counter {
        self.0.register_counter(key, at)
    }

    fn register_gauge(&self, key: &metrics::Key, at: &metrics::Metadata<'_>) -> metrics::Gauge {
        self.0.register_gauge(key, at)
    }

    fn register_histogram(
        &self,
        key: &metrics::Key,
        at: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        if key.name() == idem_core::telemetry::STORE_DURATION_SECONDS {
            return metrics::Histogram::noop();
        }
        self.0.register_histogram(key, at)
    }
}

#[tokio::test]
async fn a_recorder_that_drops_the_store_times_still_counts_and_times_calls() {
    let recorder: &'static WithoutStoreTimes =
        Box::leak(Box::new(WithoutStoreTimes(DebuggingRecorder::new())));
    let snapshotter = recorder.0.snapshotter();
    let _guard = metrics::set_default_local_recorder(recorder);
    let idem = Idempotency::new(ReferenceStore::new());

    ok(&idem, call(&idem, "orders.create", "a", 1))
        .await
        .unwrap();
    ok(&idem, call(&idem, "orders.create", "a", 1))
        .await
        .unwrap();

    let seen = Seen(snapshotter.snapshot().into_vec());
    assert_eq!(seen.calls("orders.create", "executed"), 1);
    assert_eq!(seen.calls("orders.create", "replayed"), 1);
    let store_times = seen
        .0
        .iter()
        .filter(|(key, ..)| key.key().name() == idem_core::telemetry::STORE_DURATION_SECONDS)
        .count();
    assert_eq!(store_times, 0, "the recorder dropped them");
}
