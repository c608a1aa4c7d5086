//! Semantic 7 as the body sees it: `context()`, attempts, fencing tokens, the lease-lost signal,
//! and renewal until the outcome is stored.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::{assert_lease_lost_after_run, call, charge, Charge, Context, PROMPTLY};
use crate::probes::{Held, Probe};
use crate::waiting_for;
use idem_core::{
    store::{InProgress, Record},
    Answered, CallContext, Error, ManualClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(context_is_set_only_inside_a_body),
    check!(attempt_and_fencing_token_grow_across_a_takeover),
    check!(lease_lost_fires_when_another_owner_took_over),
    check!(renewal_continues_through_a_slow_completion),
    check!(completion_retries_stop_before_the_lease_passes),
];

/// The in-progress record under the context's key, as the store holds it.
async fn held_record(ctx: &Context, context: &CallContext) -> InProgress {
    match ctx.store().get(context.key()).await.unwrap() {
        Some(Record::InProgress(record)) => record,
        other => panic!("the running call's record must be in progress, got {other:?}"),
    }
}

/// `context()` is `Some` inside a running body, with the call's key, and `None` outside.
async fn context_is_set_only_inside_a_body(ctx: Context) {
    assert!(idem_core::context().is_none(), "no context outside a body");
    let idem = ctx.handle();
    let first = call(&ctx, "o-ctx-1", 1);
    let key = first.key().clone();
    let seen = idem
        .run(first, async {
            let context = idem_core::context().expect("a context inside the body");
            Ok::<_, Error>((context.key().as_str().to_owned(), context.attempt()))
        })
        .await
        .unwrap();
    assert_eq!(seen.value, (key.as_str().to_owned(), 1));
    assert!(idem_core::context().is_none(), "no context after the call");
}

/// Semantic 7: a takeover is the record's second attempt and gets a larger fencing token, as
/// the store holds them; the stale owner is fenced; a later reservation's token is larger
/// still.
async fn attempt_and_fencing_token_grow_across_a_takeover(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let lease = Duration::from_secs(60);
    let stale_effect = Charge::held();
    let (seen_tx, seen_rx) = oneshot::channel();
    let stale = {
        let (idem, stale_effect) = (idem.clone(), stale_effect.clone());
        let stale_call = call(&ctx, "o-ctx-2", 1).with_lease(lease);
        tokio::spawn(async move {
            idem.run(stale_call, async {
                let _ = seen_tx.send(idem_core::context().expect("a context"));
                Ok::<_, Error>(stale_effect.run(1).await)
            })
            .await
        })
    };
    let first = waiting_for("the body to start", PROMPTLY, seen_rx)
        .await
        .unwrap();
    assert_eq!(first.attempt(), 1);
    let stored = held_record(&ctx, &first).await;
    assert_eq!(
        (stored.attempt(), stored.fencing_token()),
        (1, first.fencing_token())
    );
    clock.advance(lease + Duration::from_secs(1));
    let (seen_tx, seen_rx) = oneshot::channel();
    idem.run(call(&ctx, "o-ctx-2", 1).with_lease(lease), async {
        let context = idem_core::context().expect("a context");
        let stored = held_record(&ctx, &context).await;
        let _ = seen_tx.send((context, stored));
        Ok::<_, Error>(())
    })
    .await
    .unwrap();
    let (second, stored) = seen_rx.await.unwrap();
    assert_eq!(
        second.attempt(),
        2,
        "a takeover by the same call is attempt 2"
    );
    assert!(
        second.fencing_token() > first.fencing_token(),
        "the fencing token must grow on takeover: {} then {}",
        first.fencing_token(),
        second.fencing_token()
    );
    assert_eq!(
        (stored.attempt(), stored.fencing_token()),
        (2, second.fencing_token()),
        "the store must hold what the takeover reported"
    );
    stale_effect.finish();
    assert_lease_lost_after_run(&stale.await.unwrap().unwrap_err());
    idem.forget(second.key()).await.unwrap();
    let third = idem
        .run(call(&ctx, "o-ctx-2", 1), async {
            Ok::<_, Error>(idem_core::context().expect("a context").fencing_token())
        })
        .await
        .unwrap()
        .value;
    assert!(
        third > second.fencing_token(),
        "a new reservation's token must be larger too"
    );
}

/// Semantic 7: when another caller takes the key over, the stale owner's renewal learns it,
/// `lease_lost()` fires in its body, and its call ends as not recorded.
async fn lease_lost_fires_when_another_owner_took_over(ctx: Context) {
    let clock = ManualClock::new();
    // The stale owner's first renewal is held until the takeover is done: a renewal let
    // through after the clock moves on would extend the lease and keep the new owner out.
    let (held, probe) = Probe::holding(ctx.store().clone(), Held::Renewal);
    let stale_idem = ctx.handle_with(clock.clone(), held);
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let lease = Duration::from_secs(60);
    let fired = Arc::new(AtomicBool::new(false));
    let stale = {
        let fired = fired.clone();
        let stale_call = call(&ctx, "o-ctx-3", 1)
            .with_lease(lease)
            .with_renew_every(Duration::from_millis(20));
        tokio::spawn(async move {
            stale_idem
                .run(stale_call, async {
                    let context = idem_core::context().expect("a context");
                    let lost = tokio::time::timeout(Duration::from_secs(10), context.lease_lost());
                    fired.store(lost.await.is_ok(), Ordering::SeqCst);
                    Ok::<_, Error>("stale".to_string())
                })
                .await
        })
    };
    waiting_for(
        "the stale owner's renewal",
        PROMPTLY,
        probe.hold().reached.acquire(),
    )
    .await
    .unwrap()
    .forget();
    clock.advance(lease + Duration::from_secs(1));
    let new = charge(
        &idem,
        call(&ctx, "o-ctx-3", 1).with_lease(lease),
        1,
        &Charge::instant(),
    )
    .await;
    probe.hold().proceed.add_permits(1);
    let new = new.expect("the lease passed: the new owner takes the key over");
    assert!(!new.replayed);
    assert_lease_lost_after_run(&stale.await.unwrap().unwrap_err());
    assert!(
        fired.load(Ordering::SeqCst),
        "lease_lost() must fire in the stale owner's body"
    );
    let replay = charge(&idem, call(&ctx, "o-ctx-3", 1), 1, &Charge::instant())
        .await
        .unwrap();
    assert_eq!(replay.value, new.value, "the new owner's record stands");
}

/// Semantic 7: the lease is renewed until the outcome is stored, so a completion slower than
/// the lease does not let a duplicate take over.
async fn renewal_continues_through_a_slow_completion(ctx: Context) {
    let lease = Duration::from_millis(300);
    let (store, probe) = Probe::holding(ctx.store().clone(), Held::Complete);
    let slow = ctx.handle_with(idem_core::SystemClock, store);
    let side_effect = Charge::instant();
    let first = {
        let (slow, side_effect) = (slow.clone(), side_effect.clone());
        let first_call = call(&ctx, "o-ctx-4", 1).with_lease(lease);
        tokio::spawn(async move { charge(&slow, first_call, 1, &side_effect).await })
    };
    waiting_for(
        "the completion to be sent",
        PROMPTLY,
        probe.hold().reached.acquire(),
    )
    .await
    .unwrap()
    .forget();
    // Letting real time pass is the point here: three leases' worth of a stuck completion.
    tokio::time::sleep(lease * 3).await;
    let idem = ctx.handle();
    let duplicate = charge(
        &idem,
        call(&ctx, "o-ctx-4", 1).with_lease(lease),
        1,
        &side_effect,
    )
    .await;
    assert!(
        matches!(duplicate, Err(Error::InProgress { .. })),
        "the lease must be renewed while the outcome is being stored, got {duplicate:?}"
    );
    probe.hold().proceed.add_permits(1);
    let first = first.await.unwrap().expect("the slow completion lands");
    assert!(!first.replayed);
    let replay = charge(&idem, call(&ctx, "o-ctx-4", 1), 1, &side_effect)
        .await
        .unwrap();
    assert_eq!(
        replay,
        Answered {
            value: first.value,
            replayed: true
        }
    );
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 7: once the body ran, storing its outcome is retried only while the lease holds;
/// a retry that would outlast it is not made, since another caller may own the key by then.
async fn completion_retries_stop_before_the_lease_passes(ctx: Context) {
    let clock = ManualClock::new();
    let lease = Duration::from_secs(60);
    // Each failed completion takes 50 s of the 60 s lease: after the second, less of the lease
    // is left than the next pause, so the engine stops after two attempts instead of three.
    let outage = Probe::failing_completions(ctx.store().clone(), clock.clone(), lease * 5 / 6);
    let store: std::sync::Arc<dyn idem_core::store::Store> = outage.clone();
    let idem = ctx.handle_with(clock, store);
    let side_effect = Charge::instant();
    let err = charge(
        &idem,
        call(&ctx, "o-ctx-5", 1).with_lease(lease),
        1,
        &side_effect,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Store { .. })),
        "got {err:?}"
    );
    assert_eq!(
        outage.completions.load(Ordering::SeqCst),
        2,
        "the third attempt would come after the lease passed"
    );
    assert_eq!(side_effect.runs(), 1);
}
