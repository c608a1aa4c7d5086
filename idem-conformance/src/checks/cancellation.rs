//! Cancellation and lost answers: a call dropped mid-request, a store down, a completion whose answer is lost.

use std::sync::Arc;
use std::time::Duration;

use super::{call, charge, spawn_charge, Charge, Context, PROMPTLY};
use crate::probes::{Held, Probe};
use crate::waiting_for;
use idem_core::{Answered, Error};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(cancellation_during_reserve_releases_the_key),
    check!(cancellation_during_completion_still_records),
    check!(store_failure_fails_closed),
    check!(lost_completion_answer_is_retried),
];

/// Starts a call (with a 60 s lease) through a probe that holds the request `what`, drops the
/// call while it is held, and returns a retry's result: the retry waits 20 s, less than the
/// lease, so it succeeds only if the dropped call released or completed the key.
async fn retry_after_dropping_during(
    ctx: &Context,
    what: Held,
    order: &str,
    side_effect: &Arc<Charge>,
) -> Result<Answered<String>, Error> {
    let (store, probe) = Probe::holding(ctx.store().clone(), what);
    let held = ctx.handle_with(idem_core::SystemClock, store);
    let lease = Duration::from_secs(60);
    let first = spawn_charge(&held, call(ctx, order, 1).with_lease(lease), 1, side_effect);
    let reached = probe.hold().reached.acquire();
    waiting_for("the held request to be sent", PROMPTLY, reached)
        .await
        .unwrap()
        .forget();
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    let retry = call(ctx, order, 1).with_wait(Duration::from_secs(20));
    charge(&ctx.handle(), retry, 1, side_effect).await
}

/// A call dropped after its reservation landed but before it heard so releases the key.
async fn cancellation_during_reserve_releases_the_key(ctx: Context) {
    let side_effect = Charge::instant();
    let retry = retry_after_dropping_during(&ctx, Held::ReserveAnswer, "o-20", &side_effect)
        .await
        .expect("the orphaned reservation must be released");
    assert!(!retry.replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// A call dropped while its outcome is being stored still stores it: the body ran, so a retry
/// must replay, not run it again.
async fn cancellation_during_completion_still_records(ctx: Context) {
    let side_effect = Charge::instant();
    let retry = retry_after_dropping_during(&ctx, Held::Complete, "o-21", &side_effect)
        .await
        .expect("the outcome is recorded after the cancellation");
    assert_eq!(
        retry,
        Answered {
            value: "receipt-1-1".into(),
            replayed: true
        }
    );
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 9: when the store fails, the function does not run and the caller gets `Store`.
///
/// The failure is injected by a probe in front of the store, so this checks the engine, and
/// passes for any store; each store's own fault tests kill its real server.
async fn store_failure_fails_closed(ctx: Context) {
    let idem = ctx.handle_with(
        idem_core::SystemClock,
        Probe::unreachable(ctx.store().clone()),
    );
    let side_effect = Charge::instant();
    let err = charge(&idem, call(&ctx, "o-15", 1), 1, &side_effect)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Store { .. }), "got {err:?}");
    assert_eq!(err.http_status(), 503);
    assert_eq!(
        side_effect.runs(),
        0,
        "the function must not run without a reservation"
    );
}

/// Once the body has run, a completion whose answer was lost is retried and recognised as
/// stored, so the caller gets its value and retries replay it.
async fn lost_completion_answer_is_retried(ctx: Context) {
    let idem = ctx.handle_with(
        idem_core::SystemClock,
        Probe::losing_completions(ctx.store().clone(), 1),
    );
    let side_effect = Charge::instant();
    let first = charge(&idem, call(&ctx, "o-19", 1), 1, &side_effect)
        .await
        .expect("the outcome is stored despite the lost answer");
    assert!(!first.replayed);
    let retry = charge(&ctx.handle(), call(&ctx, "o-19", 1), 1, &side_effect)
        .await
        .unwrap();
    assert_eq!(
        retry,
        Answered {
            value: first.value,
            replayed: true
        }
    );
    assert_eq!(side_effect.runs(), 1);
}
