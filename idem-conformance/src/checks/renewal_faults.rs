//! The engine against a store whose renewals fail (semantic 7): retried while the lease holds,
//! `lease_lost()` when none gets through in time, and the lease held again once one does.
//! Faults are injected by a probe in front of the store under test; checks added where
//! mutation testing found the suite blind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, charge, Charge, Context, PROMPTLY};
use crate::probes::Probe;
use crate::waiting_for;
use idem_core::Error;

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(renewal_failures_are_retried_while_the_lease_holds),
    check!(lease_lost_fires_when_renewals_fail_until_the_lease_passes),
    check!(renewals_resume_after_an_outage_longer_than_the_lease),
];

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
