//! The engine against a store that fails for a while, and waits that end: checks added where
//! mutation testing found the suite blind. Faults are injected by a probe in front of the
//! store under test.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, charge, spawn_charge, Charge, Context, PROMPTLY};
use crate::probes::Probe;
use crate::waiting_for;
use idem_core::{
    store::{Completed, Outcome},
    Answered, Error, ManualClock, OnAbort,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_wait_that_ends_is_in_progress),
    check!(completion_is_retried_until_the_lease_would_pass),
    check!(completion_rides_out_an_outage_shorter_than_the_lease),
    check!(completion_retries_end_even_when_the_clock_stands_still),
    check!(a_lost_completion_is_not_mistaken_for_another_owners),
    check!(a_completion_whose_answer_came_too_late_is_read_back),
    check!(on_abort_release_after_a_wait_frees_the_key),
    check!(renewal_failures_are_retried_while_the_lease_holds),
    check!(lease_lost_fires_when_renewals_fail_until_the_lease_passes),
    check!(renewals_resume_after_an_outage_longer_than_the_lease),
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

/// Storing an outcome is retried against a failing store for as long as the lease holds, then
/// the call ends as not recorded; the key stays reserved.
async fn completion_is_retried_until_the_lease_would_pass(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    // Each failed completion takes a quarter of the lease: the fourth ends it.
    let outage = Probe::failing_completions(ctx.store().clone(), clock.clone(), lease / 4);
    let store: Arc<dyn idem_core::store::Store> = outage.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-fault-2", 1).with_lease(lease);
    let err = charge(&idem, call.clone(), 1, &side_effect)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Store { .. })),
        "got {err:?}"
    );
    assert_eq!(outage.completions.load(Ordering::SeqCst), 4);
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await;
    assert!(
        matches!(retry, Err(Error::InProgress { .. })),
        "the key stays reserved, got {retry:?}"
    );
    assert_eq!(side_effect.runs(), 1);
}

/// Completion retries are bounded on the monotonic clock as well: a clock that stands still
/// (or steps back) does not keep them going past the lease.
async fn completion_retries_end_even_when_the_clock_stands_still(ctx: Context) {
    let clock = ManualClock::new();
    let outage = Probe::failing_completions(ctx.store().clone(), clock.clone(), Duration::ZERO);
    let store: Arc<dyn idem_core::store::Store> = outage.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-fault-9", 1).with_lease(Duration::from_secs(3));
    let ended = waiting_for(
        "completion retries to end",
        Duration::from_secs(20),
        charge(&idem, call, 1, &side_effect),
    )
    .await;
    assert!(
        matches!(&ended, Err(Error::NotRecorded { .. })),
        "got {ended:?}"
    );
    assert!(outage.completions.load(Ordering::SeqCst) >= 2);
}

/// A store that fails completions for a while, as during a failover, and comes back before
/// the lease passes gets the outcome: more than a fixed few attempts are made.
async fn completion_rides_out_an_outage_shorter_than_the_lease(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    let outage = Probe::failing_completions_for(ctx.store().clone(), clock.clone(), lease / 10, 4);
    let store: Arc<dyn idem_core::store::Store> = outage.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-fault-8", 1).with_lease(lease);
    let done = charge(&idem, call.clone(), 1, &side_effect).await.unwrap();
    assert!(!done.replayed);
    assert_eq!(outage.completions.load(Ordering::SeqCst), 5);
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 13: a completion that landed but whose answer timed out after the lease passed
/// leaves no time for a retry; the record is read back, and the caller gets its outcome, not
/// "not recorded" for an outcome every retry will be replayed.
async fn a_completion_whose_answer_came_too_late_is_read_back(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    let late = Probe::losing_a_completion_answer_for(ctx.store().clone(), clock.clone(), lease);
    let store: Arc<dyn idem_core::store::Store> = late.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let call = call(&ctx, "o-fault-10", 1).with_lease(lease);
    let done = charge(&idem, call.clone(), 1, &side_effect).await;
    assert!(
        matches!(&done, Ok(answered) if !answered.replayed),
        "the outcome is in the store, got {done:?}"
    );
    assert_eq!(late.completions.load(Ordering::SeqCst), 1);
    let retry = charge(&ctx.handle(), call, 1, &side_effect).await.unwrap();
    assert!(retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// A completion whose answer was lost, retried and refused, is recognised as ours only if the
/// record is exactly ours: another owner's completed record means the lease was lost.
async fn a_lost_completion_is_not_mistaken_for_another_owners(ctx: Context) {
    let first = call(&ctx, "o-fault-3", 1);
    let theirs = Completed::new(
        *first.fingerprint(),
        Outcome::Ok(b"\"theirs\"".to_vec()),
        idem_core::Clock::now(&idem_core::SystemClock) + Duration::from_secs(3600),
    );
    let idem = ctx.handle_with(
        idem_core::SystemClock,
        Probe::overtaken(ctx.store().clone(), theirs),
    );
    let err = charge(&idem, first, 1, &Charge::instant())
        .await
        .unwrap_err();
    super::assert_lease_lost_after_run(&err);
    let replay = charge(
        &ctx.handle(),
        call(&ctx, "o-fault-3", 1),
        1,
        &Charge::instant(),
    )
    .await
    .unwrap();
    assert_eq!(
        replay,
        Answered {
            value: "theirs".into(),
            replayed: true
        }
    );
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

/// Semantic 7: a renewal that fails is tried again while the lease holds, so a short store
/// outage neither loses the key nor fires `lease_lost()`.
async fn renewal_failures_are_retried_while_the_lease_holds(ctx: Context) {
    let lease = Duration::from_millis(600);
    let idem = ctx.handle_with(
        idem_core::SystemClock,
        Probe::failing_renewals(ctx.store().clone(), 2),
    );
    let lost = Arc::new(AtomicBool::new(false));
    let side_effect = Charge::held();
    let first = {
        let (idem, lost, side_effect) = (idem.clone(), lost.clone(), side_effect.clone());
        let call = call(&ctx, "o-fault-5", 1).with_lease(lease);
        tokio::spawn(async move {
            idem.run(call, async move {
                let context = idem_core::context().expect("a context");
                // Watched for the whole run: a loss that a later renewal ends still fired.
                let mut running = std::pin::pin!(side_effect.run(1));
                let value = tokio::select! {
                    value = &mut running => value,
                    () = context.lease_lost() => {
                        lost.store(true, Ordering::SeqCst);
                        running.await
                    }
                };
                lost.fetch_or(context.is_lease_lost(), Ordering::SeqCst);
                Ok::<_, Error>(value)
            })
            .await
        })
    };
    side_effect.wait_started().await;
    // Letting real time pass is the point here: two failed renewals, then working ones.
    tokio::time::sleep(lease * 2).await;
    let other = ctx.handle();
    let duplicate = charge(
        &other,
        call(&ctx, "o-fault-5", 1).with_lease(lease),
        1,
        &side_effect,
    );
    let duplicate = waiting_for("the duplicate to be refused", PROMPTLY, duplicate).await;
    assert!(
        matches!(duplicate, Err(Error::InProgress { .. })),
        "the lease must survive two failed renewals, got {duplicate:?}"
    );
    side_effect.finish();
    assert!(!first.await.unwrap().unwrap().replayed);
    assert!(
        !lost.load(Ordering::SeqCst),
        "lease_lost() must not fire, not even for a while"
    );
}

/// Semantic 7: when no renewal reaches the store before the lease passes, `lease_lost()`
/// fires in the body.
async fn lease_lost_fires_when_renewals_fail_until_the_lease_passes(ctx: Context) {
    let lease = Duration::from_millis(300);
    let idem = ctx.handle_with(
        idem_core::SystemClock,
        Probe::failing_renewals(ctx.store().clone(), usize::MAX),
    );
    let fired = idem
        .run(call(&ctx, "o-fault-6", 1).with_lease(lease), async {
            let context = idem_core::context().expect("a context");
            let lost = waiting_for("lease_lost() to fire", PROMPTLY, context.lease_lost());
            lost.await;
            Ok::<_, Error>(true)
        })
        .await;
    // The store is still there for the completion: no one took the key over.
    assert_eq!(fired.map(|done| done.value).ok(), Some(true));
}

/// Semantic 7: renewals that fail past the lease go on, and once one reaches the store again
/// the lease holds as before: no one took the key over meanwhile, so a duplicate is still
/// refused and the body runs once.
async fn renewals_resume_after_an_outage_longer_than_the_lease(ctx: Context) {
    let lease = Duration::from_millis(300);
    let outage = Probe::renewal_outage(ctx.store().clone());
    let idem = ctx.handle_with(idem_core::SystemClock, outage.clone());
    let lost = Arc::new(Semaphore::new(0));
    let side_effect = Charge::held();
    let first = {
        let (idem, lost, side_effect) = (idem.clone(), lost.clone(), side_effect.clone());
        let call = call(&ctx, "o-fault-7", 1).with_lease(lease);
        tokio::spawn(async move {
            idem.run(call, async move {
                let context = idem_core::context().expect("a context");
                context.lease_lost().await;
                lost.add_permits(1);
                let value = side_effect.run(1).await;
                Ok::<_, Error>((value, context.is_lease_lost()))
            })
            .await
        })
    };
    waiting_for("the outage to outlast the lease", PROMPTLY, lost.acquire())
        .await
        .unwrap()
        .forget();
    outage.end_renewal_outage();
    // Two renewals through: the renewal task records the first before it sends the second.
    waiting_for(
        "two renewals to get through after the outage",
        PROMPTLY,
        outage.renewed.acquire_many(2),
    )
    .await
    .unwrap()
    .forget();
    let other = ctx.handle();
    let duplicate = charge(
        &other,
        call(&ctx, "o-fault-7", 1).with_lease(lease),
        1,
        &side_effect,
    );
    let duplicate = waiting_for("the duplicate to be refused", PROMPTLY, duplicate).await;
    assert!(
        matches!(duplicate, Err(Error::InProgress { .. })),
        "a lease renewed after the outage must hold, got {duplicate:?}"
    );
    side_effect.finish();
    let done = first.await.unwrap().unwrap();
    assert!(!done.replayed);
    assert!(
        !done.value.1,
        "a lease renewed again is no longer lost: is_lease_lost() must say so"
    );
    assert_eq!(side_effect.runs(), 1);
}
