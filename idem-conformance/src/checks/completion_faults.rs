//! The engine against a store whose completions fail for a while or whose answers are lost:
//! retried while the lease holds, read back when the answer came too late, and never taken
//! for another owner's. Faults are injected by a probe in front of the store under test;
//! checks added where mutation testing found the suite blind.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{call, charge, Charge, Context};
use crate::probes::Probe;
use crate::waiting_for;
use idem_core::{
    store::{Completed, Outcome},
    Answered, Error, ManualClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(completion_is_retried_until_the_lease_would_pass),
    check!(completion_rides_out_an_outage_shorter_than_the_lease),
    check!(completion_retries_end_even_when_the_clock_stands_still),
    check!(a_lost_completion_is_not_mistaken_for_another_owners),
    check!(a_completion_whose_answer_came_too_late_is_read_back),
];

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

/// A completion whose answer was lost, retried and refused, is recognised as ours only if the
/// record is exactly ours: another owner's completed record means the lease was lost.
async fn a_lost_completion_is_not_mistaken_for_another_owners(ctx: Context) {
    let first = call(&ctx, "o-fault-3", 1);
    let theirs = Completed::new(
        *first.fingerprint().unwrap(),
        Outcome::ok(b"\"theirs\"".to_vec()),
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
