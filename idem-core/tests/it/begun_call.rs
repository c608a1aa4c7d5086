//! A call in two halves (`Idempotency::begin`, then `run_pending`): a replay is answered by the
//! first without its body being built, anything else runs through the second, and either way
//! the call is one call to its telemetry.

use std::sync::atomic::{AtomicUsize, Ordering};

use idem_conformance::{Intercepted, Interceptor, ReferenceStore};
use idem_core::store::Store;
use idem_core::{Answered, Begun, Call, Error, Fingerprint, Idempotency, JsonCodec, ReleaseErrors};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

fn call(idem: &Idempotency, order: &str, amount: u64) -> Call {
    let key = idem.key("orders.charge").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&(order, amount)).unwrap())
}

/// `call` in two halves; its body is built (counted in `built`) only when the first half
/// leaves it pending.
async fn charge(
    idem: &Idempotency,
    call: Call,
    built: &AtomicUsize,
) -> Result<Answered<u64>, Error> {
    match idem.begin(call, &ReleaseErrors, &JsonCodec) {
        Begun::Answered(answered) => answered,
        Begun::Pending(pending) => {
            built.fetch_add(1, Ordering::SeqCst);
            let body = async { Ok::<u64, Error>(4_200) };
            idem.run_pending(pending, &ReleaseErrors, &JsonCodec, body)
                .await
        }
    }
}

/// The calls of `orders.charge` counted since the last snapshot, by outcome (a snapshot
/// drains the counters).
fn counted(snapshotter: &Snapshotter) -> Vec<(String, u64)> {
    let mut counted: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            let key = key.key();
            key.name() == "idem_calls_total"
                && key
                    .labels()
                    .any(|l| l.key() == "function" && l.value() == "orders.charge")
        })
        .map(|(key, .., value)| {
            let outcome = key.key().labels().find(|l| l.key() == "outcome").unwrap();
            match value {
                DebugValue::Counter(n) => (outcome.value().to_owned(), n),
                other => panic!("a counter: {other:?}"),
            }
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    counted.sort();
    counted
}

#[tokio::test(flavor = "current_thread")]
async fn a_replay_is_answered_by_the_first_half_and_its_body_never_built() {
    let built = AtomicUsize::new(0);
    let idem = Idempotency::new(ReferenceStore::new());
    let first = charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    assert_eq!(
        (first.value, first.replayed, built.load(Ordering::SeqCst)),
        (4_200, false, 1)
    );
    let again = charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    assert_eq!((again.value, again.replayed), (4_200, true));
    assert_eq!(built.load(Ordering::SeqCst), 1, "the replay built no body");
}

#[tokio::test(flavor = "current_thread")]
async fn another_request_under_the_key_is_refused_by_the_first_half() {
    let built = AtomicUsize::new(0);
    let idem = Idempotency::new(ReferenceStore::new());
    charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    let refused = charge(&idem, call(&idem, "o-1", 43), &built).await;
    assert!(
        matches!(refused, Err(Error::Mismatch { .. })),
        "{refused:?}"
    );
    assert_eq!(built.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_store_that_does_not_look_up_replays_through_the_second_half() {
    // A store that keeps the default lookup (a network store's) never answers the first half.
    let idem = Idempotency::new(Intercepted(NoLookup(ReferenceStore::new())));
    let built = AtomicUsize::new(0);
    charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    let again = charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    assert_eq!((again.value, again.replayed), (4_200, true));
    assert_eq!(
        built.load(Ordering::SeqCst),
        2,
        "built, and replayed by the reservation"
    );
}

/// Passes every operation on; its lookup, left to the default, misses.
struct NoLookup(ReferenceStore);

impl Interceptor for NoLookup {
    fn inner(&self) -> &dyn Store {
        &self.0
    }
}

#[tokio::test(flavor = "current_thread")]
async fn both_halves_are_one_call_and_a_dropped_pending_call_is_cancelled() {
    let recorder: &'static DebuggingRecorder = Box::leak(Box::new(DebuggingRecorder::new()));
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(recorder);
    let built = AtomicUsize::new(0);
    let idem = Idempotency::new(ReferenceStore::new());
    charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    charge(&idem, call(&idem, "o-1", 42), &built).await.unwrap();
    let pair = |outcome: &str| (outcome.to_owned(), 1);
    assert_eq!(counted(&snapshotter), [pair("executed"), pair("replayed")]);
    match idem.begin::<u64, Error, _, _>(call(&idem, "o-2", 42), &ReleaseErrors, &JsonCodec) {
        Begun::Pending(pending) => drop(pending),
        Begun::Answered(answered) => panic!("nothing to replay: {answered:?}"),
    }
    assert_eq!(counted(&snapshotter), [pair("cancelled")]);
    let key = idem.key("orders.charge").part("o-2").finish().unwrap();
    assert!(
        idem.inspect(&key).await.unwrap().is_none(),
        "nothing was reserved"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn only_the_handle_that_began_a_call_runs_it() {
    let store = std::sync::Arc::new(ReferenceStore::new());
    let began = Idempotency::from_arc(store.clone());
    let other = Idempotency::from_arc(store);
    let pending = match began.begin::<u64, Error, _, _>(
        call(&began, "o-1", 42),
        &ReleaseErrors,
        &JsonCodec,
    ) {
        Begun::Pending(pending) => pending,
        Begun::Answered(answered) => panic!("nothing to replay: {answered:?}"),
    };
    let ran = AtomicUsize::new(0);
    let body = async {
        ran.fetch_add(1, Ordering::SeqCst);
        Ok::<u64, Error>(1)
    };
    let refused = other
        .run_pending(pending, &ReleaseErrors, &JsonCodec, body)
        .await;
    assert!(
        matches!(refused, Err(Error::Unsupported { .. })),
        "{refused:?}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    let key = began.key("orders.charge").part("o-1").finish().unwrap();
    assert!(
        began.inspect(&key).await.unwrap().is_none(),
        "nothing was reserved"
    );
    // A clone of the handle that began a call is that handle.
    let pending = match began.begin::<u64, Error, _, _>(
        call(&began, "o-1", 42),
        &ReleaseErrors,
        &JsonCodec,
    ) {
        Begun::Pending(pending) => pending,
        Begun::Answered(answered) => panic!("nothing to replay: {answered:?}"),
    };
    let clone = began.clone();
    let ran = clone.run_pending(pending, &ReleaseErrors, &JsonCodec, async {
        Ok::<u64, Error>(7)
    });
    assert_eq!(ran.await.unwrap().value, 7);
}
