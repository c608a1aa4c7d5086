//! Waits that end: a duplicate whose wait ends before the running call is told so, and a call
//! that waited and then ran still releases its key when dropped. Checks added where mutation
//! testing found the suite blind.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, charge, spawn_charge, Charge, Context, PROMPTLY};
use crate::waiting_for;
use idem_core::{Error, OnAbort};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_wait_that_ends_is_in_progress),
    check!(on_abort_release_after_a_wait_frees_the_key),
];

/// Semantic 3 with `wait`: when the wait ends before the running call does, the duplicate is
/// told `InProgress`, not kept waiting for the call.
async fn a_wait_that_ends_is_in_progress(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::held();
    let first = spawn_charge(&idem, call(&ctx, "o-fault-1", 1), 1, &side_effect);
    side_effect.wait_started().await;
    let waiting = charge(
        &idem,
        call(&ctx, "o-fault-1", 1).with_wait(Duration::from_millis(300)),
        1,
        &side_effect,
    );
    let ended = waiting_for("a 300 ms wait to end", PROMPTLY, waiting).await;
    assert!(
        matches!(ended, Err(Error::InProgress { .. })),
        "a wait that ends must give InProgress, got {ended:?}"
    );
    side_effect.finish();
    assert!(!first.await.unwrap().unwrap().replayed);
}

/// Semantic 6, `release`: a call that waited for a duplicate and then ran its body still
/// releases when it is dropped.
async fn on_abort_release_after_a_wait_frees_the_key(ctx: Context) {
    let idem = ctx.handle();
    let order = "o-fault-4";
    let long = Duration::from_secs(600);
    // The first call holds the key, then fails and releases it to the waiter.
    let gate = Arc::new(Semaphore::new(0));
    let holding = Arc::new(Semaphore::new(0));
    let first = {
        let (idem, gate, holding) = (idem.clone(), gate.clone(), holding.clone());
        let call = call(&ctx, order, 1).with_lease(long);
        tokio::spawn(async move {
            idem.run(call, async move {
                holding.add_permits(1);
                gate.acquire().await.unwrap().forget();
                Err::<String, _>(Error::InvalidKey("declined".into()))
            })
            .await
        })
    };
    waiting_for("the first body to start", PROMPTLY, holding.acquire())
        .await
        .unwrap()
        .forget();
    let started = Arc::new(Semaphore::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let (observed, parked) = ctx.observed_handle();
    let waiter = {
        let (idem, started, ran) = (observed, started.clone(), ran.clone());
        let call = call(&ctx, order, 1)
            .with_lease(long)
            .with_wait(Duration::from_secs(60))
            .with_on_abort(OnAbort::Release);
        tokio::spawn(async move {
            idem.run(call, async move {
                ran.fetch_add(1, Ordering::SeqCst);
                started.add_permits(1);
                std::future::pending::<()>().await;
                Ok::<String, Error>(String::new())
            })
            .await
        })
    };
    // Once the waiter waits, the first call frees the key for it.
    waiting_for("the second call to wait", PROMPTLY, parked.acquire())
        .await
        .unwrap()
        .forget();
    gate.add_permits(1);
    assert!(first.await.unwrap().is_err());
    waiting_for("the waiter to run its body", PROMPTLY, started.acquire())
        .await
        .unwrap()
        .forget();
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    let retried = charge(
        &idem,
        call(&ctx, order, 1).with_wait(Duration::from_secs(5)),
        1,
        &Charge::instant(),
    )
    .await
    .expect("the aborted waiter must release the key");
    assert!(!retried.replayed);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
