//! Mismatches: a key reused with other arguments is refused, whatever its record.

use std::time::Duration;

use super::{call, charge, spawn_charge, Charge, Context};
use idem_core::{store::Store, Call, Error, Idempotency, ManualClock};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(mismatch_on_completed_record),
    check!(mismatch_on_in_progress_record),
    check!(mismatch_on_lease_passed_record),
    check!(mismatch_while_waiting),
];

pub(crate) async fn assert_mismatch_leaves_record(ctx: &Context, idem: &Idempotency, call: Call) {
    let before = ctx.store().get(call.key()).await.unwrap();
    let side_effect = Charge::instant();
    let err = charge(idem, call.clone(), 999, &side_effect)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Mismatch { .. }),
        "other arguments must be refused, got {err:?}"
    );
    assert_eq!(err.http_status(), 422);
    assert_eq!(side_effect.runs(), 0);
    let after = ctx.store().get(call.key()).await.unwrap();
    assert_eq!(before, after, "a mismatch must leave the record untouched");
}

/// Semantic 4 on a completed record.
async fn mismatch_on_completed_record(ctx: Context) {
    let idem = ctx.handle();
    charge(&idem, call(&ctx, "o-4", 10), 10, &Charge::instant())
        .await
        .unwrap();
    assert_mismatch_leaves_record(&ctx, &idem, call(&ctx, "o-4", 999)).await;
}

/// Semantic 4 on an in-progress record: mismatch, not "in progress".
async fn mismatch_on_in_progress_record(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::held();
    let first = spawn_charge(&idem, call(&ctx, "o-5", 10), 10, &side_effect);
    side_effect.wait_started().await;
    assert_mismatch_leaves_record(&ctx, &idem, call(&ctx, "o-5", 999)).await;
    side_effect.finish();
    first.await.unwrap().unwrap();
}

/// Semantic 4 on an in-progress record whose lease passed: no takeover with other arguments.
async fn mismatch_on_lease_passed_record(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let side_effect = Charge::held();
    let first = spawn_charge(
        &idem,
        call(&ctx, "o-6", 10).with_lease(Duration::from_secs(60)),
        10,
        &side_effect,
    );
    side_effect.wait_started().await;
    clock.advance(Duration::from_secs(61));
    assert_mismatch_leaves_record(&ctx, &idem, call(&ctx, "o-6", 999)).await;
    side_effect.finish();
    first.await.unwrap().unwrap();
}

/// Semantic 4 for a caller that asked to wait: refused at once, not parked.
async fn mismatch_while_waiting(ctx: Context) {
    let idem = ctx.handle();
    let (observed, parked) = ctx.observed_handle();
    let side_effect = Charge::held();
    let first = spawn_charge(&idem, call(&ctx, "o-7", 10), 10, &side_effect);
    side_effect.wait_started().await;
    assert_mismatch_leaves_record(
        &ctx,
        &observed,
        call(&ctx, "o-7", 999).with_wait(Duration::from_secs(60)),
    )
    .await;
    assert_eq!(
        parked.available_permits(),
        0,
        "a mismatch must be refused at once, never parked"
    );
    side_effect.finish();
    first.await.unwrap().unwrap();
}
