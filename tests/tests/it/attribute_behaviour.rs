//! The contract of `#[idempotent]`, observed through annotated functions on the memory store:
//! replays, in-progress duplicates, mismatches, errors, panics, cancellation and expiry. Under
//! `clippy::all` and `unused_qualifications` so that clippy checks the generated code too.
#![deny(warnings, unused_qualifications, clippy::all)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::attribute_fixtures::{receipt, PayError, Payments, Receipt};
use idem_core::{Idempotency, ManualClock};
use idem_stores::memory::MemoryStore;

#[tokio::test]
async fn a_retry_replays_the_first_result_without_running_again() {
    let payments = Payments::new();
    let first = payments.charge("o-1", 100).await;
    let retry = payments.charge("o-1", 100).await;
    assert_eq!(first, Ok(receipt("o-1", 100, 1)));
    assert_eq!(retry, first);
    assert_eq!(payments.runs(), 1);

    assert_eq!(
        payments.charge("o-2", 100).await,
        Ok(receipt("o-2", 100, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn a_duplicate_while_the_first_runs_is_told_it_is_in_progress() {
    let payments = Payments::new();
    payments.gate.close();
    let first = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge("o-1", 100).await }
    });
    payments.gate.entered.notified().await;

    assert_eq!(payments.charge("o-1", 100).await, Err(PayError::Idem(409)));

    payments.gate.open();
    assert_eq!(first.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn with_wait_a_duplicate_gets_the_first_calls_result() {
    let payments = Payments::new();
    payments.gate.close();
    let first = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge_waiting("o-1", 100).await }
    });
    payments.gate.entered.notified().await;
    let duplicate = tokio::spawn({
        let payments = payments.clone();
        async move { payments.charge_waiting("o-1", 100).await }
    });
    // On this single-threaded runtime one yield lets the duplicate run up to its wait.
    tokio::task::yield_now().await;
    assert!(
        !duplicate.is_finished(),
        "the duplicate must wait for the first call"
    );

    payments.gate.open();
    assert_eq!(first.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(duplicate.await.unwrap(), Ok(receipt("o-1", 100, 1)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn same_key_with_other_arguments_is_a_mismatch() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge("o-1", 100).await,
        Ok(receipt("o-1", 100, 1))
    );
    assert_eq!(payments.charge("o-1", 999).await, Err(PayError::Idem(422)));
    // The record is untouched: the original call still replays.
    assert_eq!(
        payments.charge("o-1", 100).await,
        Ok(receipt("o-1", 100, 1))
    );
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn without_a_key_the_arguments_are_the_key() {
    let payments = Payments::new();
    let first = payments.charge_by_arguments("o-1", 100).await;
    assert_eq!(payments.charge_by_arguments("o-1", 100).await, first);
    assert_eq!(
        payments.charge_by_arguments("o-1", 200).await,
        Ok(receipt("o-1", 200, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn an_err_releases_the_key_for_a_retry() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_flaky("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(payments.charge_flaky("o-1").await, Ok(receipt("o-1", 1, 2)));
    assert_eq!(payments.charge_flaky("o-1").await, Ok(receipt("o-1", 1, 2)));
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn store_err_replays_a_final_error_and_releases_the_others() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_declined("declined").await,
        Err(PayError::Declined(1))
    );
    assert_eq!(
        payments.charge_declined("declined").await,
        Err(PayError::Declined(1))
    );
    assert_eq!(payments.runs(), 1);

    // `Unavailable` is not final: released, and the retry runs.
    assert_eq!(
        payments.charge_declined("o-2").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(
        payments.charge_declined("o-2").await,
        Ok(receipt("o-2", 1, 3))
    );
    assert_eq!(payments.runs(), 3);
}

#[tokio::test]
async fn store_err_all_replays_every_error() {
    let payments = Payments::new();
    assert_eq!(
        payments.charge_storing_all("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(
        payments.charge_storing_all("o-1").await,
        Err(PayError::Unavailable)
    );
    assert_eq!(payments.runs(), 1);
}

async fn panic_in(
    call: impl std::future::Future<Output = Result<Receipt, PayError>> + Send + 'static,
) {
    let panicked = tokio::spawn(call).await;
    assert!(panicked.unwrap_err().is_panic());
}

#[tokio::test]
async fn a_panic_holds_the_key_until_its_lease_passes() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking("o-1").await }
    })
    .await;
    // The charge may have gone out: a retry is told it is in progress, as after a crash.
    assert_eq!(
        payments.charge_panicking("o-1").await,
        Err(PayError::Idem(409))
    );
    assert_eq!(payments.runs(), 1);

    clock.advance(idem_core::DEFAULT_LEASE + Duration::from_secs(1));
    assert_eq!(
        payments.charge_panicking("o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn with_on_abort_release_a_panic_releases_the_key() {
    let payments = Payments::new();
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking_releasing("o-1").await }
    })
    .await;
    assert_eq!(
        payments.charge_panicking_releasing("o-1").await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn with_on_abort_fail_a_panic_is_the_final_outcome() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    panic_in({
        let payments = payments.clone();
        async move { payments.charge_panicking_failing("o-1").await }
    })
    .await;
    clock.advance(idem_core::DEFAULT_LEASE + Duration::from_secs(1));
    for _ in 0..2 {
        assert_eq!(
            payments.charge_panicking_failing("o-1").await,
            Err(PayError::Idem(500))
        );
    }
    assert_eq!(payments.runs(), 1);
}

/// Starts `charge_waiting` or `charge` for `o-1`, lets its body reach the gate and drops it.
async fn cancel_mid_body<F: std::future::Future>(payments: &Payments, call: F) {
    payments.gate.close();
    let mut call = Box::pin(call);
    tokio::select! {
        biased;
        _ = &mut call => panic!("the body is held at the gate"),
        () = payments.gate.entered.notified() => {}
    }
    drop(call);
    payments.gate.hold.store(false, Ordering::SeqCst);
}

#[tokio::test]
async fn a_cancelled_call_holds_the_key() {
    let payments = Payments::new();
    cancel_mid_body(&payments, payments.charge("o-1", 100)).await;
    assert_eq!(payments.charge("o-1", 100).await, Err(PayError::Idem(409)));
    assert_eq!(payments.runs(), 1);
}

#[tokio::test]
async fn with_on_abort_release_a_cancelled_call_releases_the_key() {
    let payments = Payments::new();
    cancel_mid_body(&payments, payments.charge_waiting_releasing("o-1", 100)).await;

    // The release is sent from a task of its own; the retry waits for it (not for the lease,
    // which is longer than `wait`) and then runs.
    assert_eq!(
        payments.charge_waiting_releasing("o-1", 100).await,
        Ok(receipt("o-1", 100, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn the_body_sees_its_call_context() {
    let payments = Payments::new();
    let (attempt, key) = payments.charge_in_context("o-1").await.unwrap();
    assert_eq!(attempt, 1);
    assert!(key.ends_with("|o-1"), "{key}");
    assert!(idem_core::context().is_none(), "only inside the body");
}

#[tokio::test]
async fn a_record_expires_after_its_ttl() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 1))
    );

    clock.advance(Duration::from_secs(3599));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 1))
    );
    assert_eq!(payments.runs(), 1);

    clock.advance(Duration::from_secs(2));
    assert_eq!(
        payments.charge_for_an_hour("o-1", 1).await,
        Ok(receipt("o-1", 1, 2))
    );
    assert_eq!(payments.runs(), 2);
}

#[tokio::test]
async fn lease_sets_how_long_a_crashed_call_holds_the_key() {
    let clock = ManualClock::new();
    let payments = Payments::on(Idempotency::new(MemoryStore::new()).with_clock(clock.clone()));
    cancel_mid_body(&payments, payments.charge_briefly("o-1", 5)).await;
    assert_eq!(
        payments.charge_briefly("o-1", 5).await,
        Err(PayError::Idem(409))
    );
    // One second, not the default thirty: then the same call takes the key over.
    clock.advance(Duration::from_millis(1_001));
    assert_eq!(
        payments.charge_briefly("o-1", 5).await,
        Ok(receipt("o-1", 5, 2))
    );
}
