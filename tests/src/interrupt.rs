//! A call interrupted inside its body: the fault tests' way of making something happen to the
//! store (its server killed, say) between the reservation and the completion, and what the
//! stores' fault tests share around it (the calls they make, the interrupted call's error,
//! what a key does once its server is back); and a call held in its body while a duplicate
//! comes, for the tests that count a conflict's requests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use idem_core::{Answered, Call, Error, Fingerprint, Idempotency, ManualClock};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Runs `call` with a body that counts itself in `runs`, runs `interrupt` once the body has
/// started (the key is reserved by then), and lets the body return `"created"`; returns what
/// the call returned.
pub async fn interrupted_mid_body(
    idem: &Idempotency,
    call: Call,
    runs: &Arc<AtomicUsize>,
    interrupt: impl FnOnce(),
) -> Result<Answered<String>, Error> {
    let (started_tx, started) = oneshot::channel();
    let (finish, finish_rx) = oneshot::channel::<()>();
    let call = tokio::spawn({
        let (idem, runs) = (idem.clone(), runs.clone());
        async move {
            idem.run(call, async move {
                runs.fetch_add(1, Ordering::SeqCst);
                started_tx.send(()).expect("the test waits for the start");
                finish_rx.await.expect("the test lets the body finish");
                Ok::<_, Error>("created".to_owned())
            })
            .await
        }
    });
    started.await.expect("the body starts");
    interrupt();
    finish.send(()).expect("the body waits to finish");
    call.await.expect("the call does not panic")
}

/// Starts `call` with a body that answers `value` once the returned sender fires, and waits
/// until the body runs, so the key is held in progress; the handle answers what the call
/// returned.
pub async fn held_in_body(
    idem: &Idempotency,
    call: Call,
    value: String,
) -> (
    oneshot::Sender<()>,
    JoinHandle<Result<Answered<String>, Error>>,
) {
    let (started_tx, started) = oneshot::channel();
    let (finish, finish_rx) = oneshot::channel::<()>();
    let idem = idem.clone();
    let first = tokio::spawn(async move {
        idem.run(call, async move {
            started_tx.send(()).expect("the test waits for the start");
            finish_rx.await.expect("the test lets the body finish");
            Ok::<_, Error>(value)
        })
        .await
    });
    started.await.expect("the body starts");
    (finish, first)
}

/// The fault tests' lease. Short: a completion against a dead server is retried for as long
/// as the lease, in real time too.
pub const LEASE: Duration = Duration::from_secs(3);

/// The call that creates `order`, leased for [`LEASE`].
pub fn call(idem: &Idempotency, order: &str) -> Call {
    let key = idem.key("orders.create").part(order).finish().unwrap();
    Call::new(key, Fingerprint::of(&order).unwrap()).with_lease(LEASE)
}

/// Runs the call that creates `order` with a body that counts its runs; returns whether it
/// was replayed.
pub async fn create(idem: &Idempotency, order: &str, runs: &AtomicUsize) -> Result<bool, Error> {
    idem.run(call(idem, order), async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, Error>(format!("created {order}"))
    })
    .await
    .map(|done| done.replayed)
}

/// The call that creates `o-1` reserves its key and `kill` takes the server down while its
/// body runs: the outcome cannot be stored, and the caller is told so and not invited to
/// retry.
pub async fn killed_mid_body(idem: &Idempotency, runs: &Arc<AtomicUsize>, kill: impl FnOnce()) {
    let err = interrupted_mid_body(idem, call(idem, "o-1"), runs, kill)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Store { .. })),
        "{err:?}"
    );
    assert!(err.ran_without_record() && !err.is_retryable(), "{err:?}");
    assert_eq!(err.http_status(), 500);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// After [`killed_mid_body`], with the server back and the reservation kept: the lease still
/// holds, so `o-1` does not run again; once it passes (on `clock`), a retry takes the
/// reservation over and runs the body, and later retries replay it. `o-2`, untouched by the
/// outage, was never consumed.
pub async fn back_up_with_the_reservation(
    idem: &Idempotency,
    clock: &ManualClock,
    runs: &AtomicUsize,
) {
    let err = create(idem, "o-1", runs).await.unwrap_err();
    assert!(matches!(err, Error::InProgress { .. }), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    clock.advance(LEASE + Duration::from_millis(1));
    assert!(!create(idem, "o-1", runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(create(idem, "o-1", runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    assert!(!create(idem, "o-2", runs).await.unwrap());
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}
