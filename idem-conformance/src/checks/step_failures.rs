//! Steps that fail: errors before and after a step, bad names and values, step writes that
//! fail or are refused.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::steps::{assert_ran_once, checkout_call, Checkout, ShopError, Stop, LEASE};
use super::Context;
use crate::probes::Probe;
use idem_core::{
    step,
    store::{Record, LEASE_GRACE},
    Error, ManualClock, SystemClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(an_error_after_a_step_keeps_the_key_for_the_same_call),
    check!(an_error_before_any_step_releases_the_key),
    check!(a_step_name_used_twice_is_an_error),
    check!(an_undecodable_step_value_is_a_codec_error),
    check!(a_failed_step_write_is_retried),
    check!(a_step_that_cannot_be_recorded_holds_the_key),
    check!(a_failed_step_can_be_tried_again_in_the_same_run),
    check!(a_refused_step_write_fires_lease_lost),
];

/// An `Err` after a step keeps the key: another payload is refused (422) even after the
/// lease and its grace, and a retry of the same call resumes.
async fn an_error_after_a_step_keeps_the_key_for_the_same_call(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let checkout = Checkout::new();
    let failed = checkout
        .run(&idem, checkout_call(&ctx, "s-4", 10), Stop::Fail)
        .await;
    assert!(matches!(failed, Err(ShopError::Declined)), "{failed:?}");
    for (what, wait) in [
        ("at once", Duration::ZERO),
        ("after the lease and its grace", LEASE + LEASE_GRACE),
    ] {
        clock.advance(wait);
        let other = checkout
            .run(&idem, checkout_call(&ctx, "s-4", 99), Stop::Never)
            .await;
        assert!(
            matches!(other, Err(ShopError::Idem(Error::Mismatch { .. }))),
            "another payload {what} must be refused, got {other:?}"
        );
    }
    let resumed = checkout
        .run(&idem, checkout_call(&ctx, "s-4", 10), Stop::Never)
        .await
        .expect("the same call resumes");
    assert_eq!(resumed.value, ("ch_1".to_string(), 1));
    assert_ran_once(&checkout, "a retry after an error");
}

/// With no step recorded, an `Err` releases the key as always: a corrected retry runs.
async fn an_error_before_any_step_releases_the_key(ctx: Context) {
    let idem = ctx.handle();
    let call = checkout_call(&ctx, "s-6", 10);
    let key = call.key().clone();
    let failed = idem
        .run(call, async {
            step("charge", async { Err::<String, _>(ShopError::Declined) }).await
        })
        .await;
    assert!(matches!(failed, Err(ShopError::Declined)), "{failed:?}");
    assert_eq!(
        ctx.store().get(&key).await.unwrap(),
        None,
        "a failed step is not recorded, and the key is released"
    );
    let checkout = Checkout::new();
    let corrected = checkout
        .run(&idem, checkout_call(&ctx, "s-6", 20), Stop::Never)
        .await
        .expect("another payload runs on a released key");
    assert_eq!(corrected.value, ("ch_1".to_string(), 1));
}

/// Two steps with one name in one call are refused: a retry could not tell their values apart.
async fn a_step_name_used_twice_is_an_error(ctx: Context) {
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    let twice = idem
        .run(checkout_call(&ctx, "s-7", 10), async {
            for _ in 0..2 {
                step("charge", async {
                    Ok::<_, Error>(runs.fetch_add(1, Ordering::SeqCst))
                })
                .await?;
            }
            Ok::<_, Error>(())
        })
        .await;
    assert!(
        matches!(&twice, Err(Error::DuplicateStep { step, .. }) if step == "charge"),
        "{twice:?}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the second use must not run"
    );
}

/// A recorded value that no longer decodes as the step's type (the code changed between
/// attempts) is a codec error, not a panic, and the step does not run again.
async fn an_undecodable_step_value_is_a_codec_error(ctx: Context) {
    let idem = ctx.handle();
    let checkout = Checkout::new();
    let failed = checkout
        .run(&idem, checkout_call(&ctx, "s-8", 10), Stop::Fail)
        .await;
    assert!(matches!(failed, Err(ShopError::Declined)), "{failed:?}");
    let runs = AtomicUsize::new(0);
    let changed = idem
        .run(checkout_call(&ctx, "s-8", 10), async {
            let charge: u64 = step("charge", async {
                Ok::<_, Error>(runs.fetch_add(1, Ordering::SeqCst) as u64)
            })
            .await?;
            Ok::<_, Error>(charge)
        })
        .await;
    assert!(matches!(changed, Err(Error::Codec(_))), "{changed:?}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a recorded step must not run"
    );
}

/// A step write that fails is tried again while the lease holds: the step runs once and the
/// call completes.
async fn a_failed_step_write_is_retried(ctx: Context) {
    let idem = ctx.handle_with(SystemClock, Probe::failing_steps(ctx.store().clone(), 1));
    let checkout = Checkout::new();
    let done = checkout
        .run(&idem, checkout_call(&ctx, "s-9", 10), Stop::Never)
        .await
        .expect("the second write lands");
    assert_eq!(done.value, ("ch_1".to_string(), 1));
    assert_ran_once(&checkout, "a retried step write");
}

/// A step that ran but whose value could not be recorded is `NotRecorded`, and the key is held
/// until its lease passes instead of being released: a retry must not run the step again
/// while its effect is unrecorded.
async fn a_step_that_cannot_be_recorded_holds_the_key(ctx: Context) {
    let idem = ctx.handle_with(SystemClock, Probe::failing_steps(ctx.store().clone(), 3));
    let checkout = Checkout::new();
    let call = checkout_call(&ctx, "s-10", 10);
    let key = call.key().clone();
    let failed = checkout.run(&idem, call, Stop::Never).await;
    assert!(
        matches!(&failed, Err(ShopError::Idem(error)) if error.ran_without_record()),
        "{failed:?}"
    );
    match ctx.store().get(&key).await.unwrap() {
        Some(Record::InProgress(held)) => {
            assert!(!held.is_released(), "the key must stay held: {held:?}");
            assert!(held.steps().is_empty());
        }
        other => panic!("the key must stay reserved, found {other:?}"),
    }
    let retry = checkout
        .run(&ctx.handle(), checkout_call(&ctx, "s-10", 10), Stop::Never)
        .await;
    assert!(
        matches!(retry, Err(ShopError::Idem(Error::InProgress { .. }))),
        "a retry must wait for the lease, got {retry:?}"
    );
    assert_eq!(checkout.charges(), 1, "the unrecorded charge ran again");
    assert_eq!(checkout.ledgers(), 0);
}

/// A step whose future returned `Err` holds no value, so the body may try it again under the
/// same name; the value of the try that succeeds is the one recorded and returned.
async fn a_failed_step_can_be_tried_again_in_the_same_run(ctx: Context) {
    let idem = ctx.handle();
    let tries = AtomicUsize::new(0);
    let done = idem
        .run(checkout_call(&ctx, "s-14", 10), async {
            let mut last = None;
            for _ in 0..3 {
                let outcome = step("flaky", async {
                    match tries.fetch_add(1, Ordering::SeqCst) {
                        0 => Err(ShopError::Declined),
                        n => Ok(format!("try {}", n + 1)),
                    }
                })
                .await;
                match outcome {
                    Ok(value) => return Ok(value),
                    Err(ShopError::Declined) => last = Some(ShopError::Declined),
                    Err(other) => return Err(other),
                }
            }
            Err(last.expect("three tries"))
        })
        .await;
    let done = done.unwrap_or_else(|e| panic!("the second try must run and succeed: {e:?}"));
    assert_eq!(done.value, "try 2");
    assert_eq!(tries.load(Ordering::SeqCst), 2, "one failed try, one good");
}

/// Semantic 7: a step write the store refuses because another owner took the key over tells
/// the body at once: `lease_lost()` fires with the step's `NotRecorded`, though the owner's own
/// clock does not yet say its lease has passed.
async fn a_refused_step_write_fires_lease_lost(ctx: Context) {
    let idem = ctx.handle_with(ManualClock::new(), ctx.store().clone());
    let call = || checkout_call(&ctx, "s-15", 10);
    let stale = idem
        .run(call(), async {
            // A retry whose clock is past the lease (skew, or renewals that never arrived)
            // takes the key over while this owner's clock stands still.
            let successor_clock = ManualClock::new();
            successor_clock.advance(LEASE + Duration::from_millis(1));
            let successor = ctx.handle_with(successor_clock, ctx.store().clone());
            let (took_over, taken) = tokio::sync::oneshot::channel();
            let (told, finish) = tokio::sync::oneshot::channel::<()>();
            let retry = successor.run(call(), async move {
                let _ = took_over.send(());
                let _ = finish.await;
                Ok::<_, Error>("retry".to_owned())
            });
            let stale_step = async {
                taken.await.expect("the retry's body starts");
                let context = idem_core::context().expect("a context");
                assert!(!context.is_lease_lost(), "nothing told this owner yet");
                let refused = step("charge", async { Ok::<_, Error>(1) }).await;
                assert!(
                    matches!(&refused, Err(Error::NotRecorded { .. })),
                    "a stale owner's step is not recorded, got {refused:?}"
                );
                assert!(
                    context.is_lease_lost(),
                    "the refusal itself must tell the body, not the next renewal"
                );
                let _ = told.send(());
            };
            let (retry, ()) = tokio::join!(retry, stale_step);
            assert!(!retry.unwrap().replayed, "the retry took the key over");
            Ok::<_, Error>("stale".to_owned())
        })
        .await;
    assert!(
        stale.is_err(),
        "the stale owner's outcome is not recorded either, got {stale:?}"
    );
    let replay = idem
        .run(call(), async { Ok::<_, Error>("third".to_owned()) })
        .await
        .unwrap();
    assert_eq!(replay.value, "retry", "the successor's outcome stands");
}
