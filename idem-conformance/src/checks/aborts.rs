//! Semantic 6: what a panic or a dropped future does to the key once the body started.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, Context, PROMPTLY};
use crate::waiting_for;
use idem_core::{
    store::{Outcome, Record},
    Answered, Call, Error, Idempotency, OnAbort,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(drop_after_start_holds_the_key),
    check!(panic_after_start_holds_the_key),
    check!(on_abort_release_frees_the_key),
    check!(on_abort_fail_records_the_abort),
];

/// The lease of a call that is aborted: short, since the holding checks wait for it to pass.
const LEASE: Duration = Duration::from_secs(1);
/// How long a retry waits for an aborted call's key.
const RETRY_WAIT: Duration = Duration::from_secs(5);

/// How a call is aborted once its body started.
#[derive(Clone, Copy, Debug)]
enum Abort {
    /// The caller's future is dropped, as when a client disconnects from an HTTP handler.
    Drop,
    /// The body panics.
    Panic,
}

/// Runs `call` with a body that starts, counts itself in `runs`, then is aborted `how`.
async fn abort_after_start(idem: &Idempotency, call: Call, how: Abort, runs: &Arc<AtomicUsize>) {
    let started = Arc::new(Semaphore::new(0));
    let task = {
        let (idem, started, runs) = (idem.clone(), started.clone(), runs.clone());
        tokio::spawn(async move {
            idem.run(call, async move {
                runs.fetch_add(1, Ordering::SeqCst);
                started.add_permits(1);
                if matches!(how, Abort::Panic) {
                    std::panic::panic_any(crate::IntendedPanic("card network exploded"));
                }
                std::future::pending::<()>().await;
                Ok::<String, Error>(String::new())
            })
            .await
        })
    };
    waiting_for("the body to start", PROMPTLY, started.acquire())
        .await
        .unwrap()
        .forget();
    if matches!(how, Abort::Drop) {
        task.abort();
    }
    let joined = task.await.expect_err("the call was aborted");
    match how {
        Abort::Drop => assert!(joined.is_cancelled()),
        Abort::Panic => assert!(joined.is_panic(), "the panic must propagate"),
    }
}

/// A retry of `call` whose body counts itself in `runs` and returns the attempt it ran as.
async fn retry(idem: &Idempotency, call: Call, runs: &AtomicUsize) -> Result<Answered<u32>, Error> {
    idem.run(call, async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, Error>(idem_core::context().expect("inside a body").attempt())
    })
    .await
}

/// Semantic 6, `hold`: the key stays reserved and unrenewed, a duplicate is told "in
/// progress" with the time left, and once the lease passes the same call takes over as its
/// second attempt (a release would make it the first).
async fn assert_abort_holds(ctx: &Context, order: &str, how: Abort) {
    let idem = ctx.handle();
    let runs = Arc::new(AtomicUsize::new(0));
    abort_after_start(&idem, call(ctx, order, 1).with_lease(LEASE), how, &runs).await;
    let duplicate = retry(&idem, call(ctx, order, 1).with_lease(LEASE), &runs).await;
    match duplicate {
        Err(Error::InProgress { retry_after, .. }) => assert!(
            retry_after <= LEASE,
            "retry_after must be at most the lease, got {retry_after:?}"
        ),
        other => panic!("a key held after an abort ({how:?}) must be in progress, got {other:?}"),
    }
    let taken_over = retry(
        &idem,
        call(ctx, order, 1).with_lease(LEASE).with_wait(RETRY_WAIT),
        &runs,
    )
    .await
    .expect("once the lease passes, the same call takes the held key over");
    assert_eq!(
        taken_over,
        Answered {
            value: 2,
            replayed: false
        },
        "after an abort ({how:?}) the key is held, not released, and taken over as attempt 2"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Semantic 6: a dropped call whose body started holds the key until its lease passes.
async fn drop_after_start_holds_the_key(ctx: Context) {
    assert_abort_holds(&ctx, "o-abort-1", Abort::Drop).await;
}

/// Semantic 6: a panic in a started body holds the key until its lease passes, and propagates.
async fn panic_after_start_holds_the_key(ctx: Context) {
    assert_abort_holds(&ctx, "o-abort-2", Abort::Panic).await;
}

/// Semantic 6, `release`: the key is freed at once, so a retry runs as a first attempt long
/// before the lease passes.
async fn on_abort_release_frees_the_key(ctx: Context) {
    let idem = ctx.handle();
    for (order, how) in [("o-abort-3", Abort::Drop), ("o-abort-4", Abort::Panic)] {
        let runs = Arc::new(AtomicUsize::new(0));
        let long = Duration::from_secs(600);
        let aborted = call(&ctx, order, 1)
            .with_lease(long)
            .with_on_abort(OnAbort::Release);
        abort_after_start(&idem, aborted, how, &runs).await;
        let retried = retry(&idem, call(&ctx, order, 1).with_wait(RETRY_WAIT), &runs)
            .await
            .unwrap_or_else(|e| panic!("on_abort = release ({how:?}) must free the key: {e:?}"));
        assert_eq!(
            retried,
            Answered {
                value: 1,
                replayed: false
            }
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}

/// Semantic 6, `fail`: the abort is recorded as the call's final outcome; every retry gets
/// `Aborted` (500, not retryable) and the body never runs again.
async fn on_abort_fail_records_the_abort(ctx: Context) {
    let idem = ctx.handle();
    for (order, how) in [("o-abort-5", Abort::Drop), ("o-abort-6", Abort::Panic)] {
        let runs = Arc::new(AtomicUsize::new(0));
        let long = Duration::from_secs(600);
        let aborted = call(&ctx, order, 1)
            .with_lease(long)
            .with_on_abort(OnAbort::Fail);
        let key = aborted.key().clone();
        abort_after_start(&idem, aborted, how, &runs).await;
        for _ in 0..2 {
            let err = retry(&idem, call(&ctx, order, 1).with_wait(RETRY_WAIT), &runs)
                .await
                .expect_err("an aborted call's outcome stands");
            assert!(
                matches!(err, Error::Aborted { .. }),
                "on_abort = fail ({how:?}) must replay Aborted, got {err:?}"
            );
            assert_eq!(err.http_status(), 500);
            assert!(!err.is_retryable());
        }
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "the body must not run again"
        );
        let stored = ctx.store().get(&key).await.unwrap();
        assert!(
            matches!(&stored, Some(Record::Completed(c)) if *c.outcome() == Outcome::Aborted),
            "the store must hold the aborted outcome, got {stored:?}"
        );
    }
}
