//! Leases: renewed while the body runs, fenced against a stale owner, free once passed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::mismatches::assert_mismatch_leaves_record;
use super::{
    assert_lease_lost_after_run, call, charge, in_progress, spawn_charge, Charge, Context, PROMPTLY,
};
use crate::waiting_for;
use idem_core::Clock as _;
use idem_core::{
    store::{Completed, Outcome, OwnerToken, Record, Reservation, Store},
    Answered, Error, Fingerprint, Idempotency, ManualClock, StoreError,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(lease_is_renewed_while_running),
    check!(lease_takeover_fences_the_stale_owner),
    check!(only_the_owner_completes_releases_or_renews),
    check!(abandoned_reservation_is_free_for_anyone),
    check!(lease_is_renewed_while_the_body_blocks_its_thread),
];

/// Semantic 7: while the function runs longer than its lease, the lease is renewed, so no one
/// takes the key over.
async fn lease_is_renewed_while_running(ctx: Context) {
    let idem = ctx.handle();
    let lease = Duration::from_millis(300);
    let side_effect = Charge::held();
    let first = spawn_charge(
        &idem,
        call(&ctx, "o-12", 1).with_lease(lease),
        1,
        &side_effect,
    );
    side_effect.wait_started().await;
    // Letting real time pass is the point here: three leases' worth.
    tokio::time::sleep(lease * 3).await;
    let duplicate = charge(
        &idem,
        call(&ctx, "o-12", 1).with_lease(lease),
        1,
        &side_effect,
    );
    let duplicate = waiting_for(
        "the duplicate to be refused (a store that lets it take over parks it in the held body)",
        PROMPTLY,
        duplicate,
    )
    .await;
    assert!(
        matches!(duplicate, Err(Error::InProgress { .. })),
        "a renewed lease must hold, got {duplicate:?}"
    );
    side_effect.finish();
    assert!(!first.await.unwrap().unwrap().replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 7: after the lease passes another caller takes over; the stale owner's completion,
/// made while the new owner still runs, is refused with `LeaseLost` and the new owner's record
/// stands.
async fn lease_takeover_fences_the_stale_owner(ctx: Context) {
    let lease = Duration::from_secs(60);
    let StaleOwner {
        clock,
        idem,
        call: stale,
        effect: stale_effect,
    } = StaleOwner::held(&ctx, "o-13", lease).await;
    clock.advance(lease + Duration::from_secs(1));
    // The stale owner finishes while the new one still runs, and again once it finished.
    let new_effect = Charge::named("new", true);
    let taken = spawn_charge(
        &idem,
        call(&ctx, "o-13", 1).with_lease(lease),
        1,
        &new_effect,
    );
    new_effect.wait_started().await;
    stale_effect.finish();
    let refused = stale.await.unwrap().unwrap_err();
    assert_lease_lost_after_run(&refused);
    new_effect.finish();
    assert_eq!(
        taken.await.unwrap().unwrap(),
        Answered {
            value: "new-1-1".into(),
            replayed: false
        }
    );
    let replay = charge(&idem, call(&ctx, "o-13", 1), 1, &Charge::instant())
        .await
        .unwrap();
    assert_eq!(
        replay,
        Answered {
            value: "new-1-1".into(),
            replayed: true
        },
        "the new owner's record must stand"
    );
}

/// Semantic 7 at the store level: complete, release and renew are fenced by the owner token.
async fn only_the_owner_completes_releases_or_renews(ctx: Context) {
    let store = ctx.store();
    let key = ctx.key("fencing");
    let fingerprint = Fingerprint::of("fencing").unwrap();
    let now = idem_core::SystemClock.now();
    let claim = in_progress(fingerprint, now + Duration::from_secs(60), now);
    assert_eq!(
        store.reserve(&key, &claim).await.unwrap(),
        Reservation::Reserved(claim.record().clone())
    );
    let before = store.get(&key).await.unwrap();
    assert_eq!(before, Some(Record::InProgress(claim.record().clone())));
    let intruder = OwnerToken::generate();
    let completed = Completed::new(
        fingerprint,
        Outcome::ok(b"\"x\"".to_vec()),
        now + Duration::from_secs(60),
    );
    assert!(matches!(
        store.complete(&key, &intruder, &completed).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.release(&key, &intruder).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store
            .renew(&key, &intruder, now + Duration::from_secs(120))
            .await,
        Err(StoreError::LeaseLost)
    ));
    assert_eq!(
        store.get(&key).await.unwrap(),
        before,
        "a non-owner must change nothing"
    );
    store
        .renew(&key, claim.record().owner(), now + Duration::from_secs(120))
        .await
        .expect("the owner renews");
    store
        .complete(&key, claim.record().owner(), &completed)
        .await
        .expect("the owner completes");
    assert_eq!(
        store.get(&key).await.unwrap(),
        Some(Record::Completed(completed))
    );
    assert!(
        matches!(
            store.release(&key, claim.record().owner()).await,
            Err(StoreError::LeaseLost)
        ),
        "a completed record can't be released"
    );
}

/// An in-progress record whose lease passed more than [`LEASE_GRACE`](idem_core::store::LEASE_GRACE) ago
/// is abandoned: a caller with other arguments may then take the key over, and the stale owner
/// is fenced off.
async fn abandoned_reservation_is_free_for_anyone(ctx: Context) {
    let lease = Duration::from_secs(60);
    let StaleOwner {
        clock,
        idem,
        call: stale,
        effect: stale_effect,
    } = StaleOwner::held(&ctx, "o-23", lease).await;
    clock.advance(lease + idem_core::store::LEASE_GRACE - Duration::from_secs(1));
    assert_mismatch_leaves_record(&ctx, &idem, call(&ctx, "o-23", 2)).await;
    clock.advance(Duration::from_secs(2));
    let other = charge(
        &idem,
        call(&ctx, "o-23", 2).with_lease(lease),
        2,
        &Charge::instant(),
    )
    .await
    .expect("an abandoned reservation is free for any caller");
    assert_eq!(
        other,
        Answered {
            value: "receipt-1-2".into(),
            replayed: false
        }
    );
    stale_effect.finish();
    let refused = stale.await.unwrap().unwrap_err();
    assert_lease_lost_after_run(&refused);
}

/// The lease is renewed from a task of its own: a body that holds its thread for three leases
/// (in `block_in_place`) still keeps the key, and a duplicate meanwhile is told "in progress".
async fn lease_is_renewed_while_the_body_blocks_its_thread(ctx: Context) {
    let idem = ctx.handle();
    let lease = Duration::from_millis(300);
    let started = Arc::new(Semaphore::new(0));
    // The body holds its worker thread until the check lets it go, so the duplicate below
    // always finds it running however late the check's own task is scheduled.
    let (release, released) = std::sync::mpsc::channel::<()>();
    let blocking = {
        let (idem, call, started) = (
            idem.clone(),
            call(&ctx, "o-24", 1).with_lease(lease),
            started.clone(),
        );
        tokio::spawn(async move {
            idem.run(call, async move {
                started.add_permits(1);
                // Holding the thread is the point here (bounded, should the check fail). In
                // `block_in_place`, as a body that blocks should: a worker blocked outright can
                // hold up the runtime's timers and I/O, the renewal's and the check's alike.
                tokio::task::block_in_place(|| {
                    let _ = released.recv_timeout(PROMPTLY);
                });
                Ok::<_, Error>("blocked".to_string())
            })
            .await
        })
    };
    waiting_for("the body to start", PROMPTLY, started.acquire())
        .await
        .unwrap()
        .forget();
    // Letting real time pass is the point: the lease would have passed twice without renewals.
    tokio::time::sleep(lease * 2).await;
    let side_effect = Charge::instant();
    let duplicate = charge(
        &idem,
        call(&ctx, "o-24", 1).with_lease(lease),
        1,
        &side_effect,
    )
    .await;
    let _ = release.send(());
    assert!(
        matches!(duplicate, Err(Error::InProgress { .. })),
        "the lease must be renewed while the body blocks, got {duplicate:?}"
    );
    assert_eq!(side_effect.runs(), 0);
    assert!(!blocking.await.unwrap().unwrap().replayed);
}

/// The first owner of an order's key, on a clock the check moves, held in its body until its
/// effect is finished: what the takeover checks make stale.
struct StaleOwner {
    clock: ManualClock,
    idem: Idempotency,
    call: JoinHandle<Result<Answered<String>, Error>>,
    effect: Arc<Charge>,
}

impl StaleOwner {
    /// Starts charging `order` (amount 1) under `lease`, and waits until its body runs.
    async fn held(ctx: &Context, order: &str, lease: Duration) -> Self {
        let clock = ManualClock::new();
        let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
        let effect = Charge::held();
        let call = spawn_charge(&idem, call(ctx, order, 1).with_lease(lease), 1, &effect);
        effect.wait_started().await;
        StaleOwner {
            clock,
            idem,
            call,
            effect,
        }
    }
}
