//! Replays: the first call runs, retries and duplicates get its value or are told it runs.

use std::time::Duration;

use super::{call, charge, in_progress, spawn_charge, Charge, Context, PROMPTLY};
use crate::waiting_for;
use idem_core::Clock as _;
use idem_core::{
    store::{Record, Reservation, Store},
    Answered, Error, Fingerprint, ManualClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(fresh_call_runs_then_replays),
    check!(concurrent_reservations_admit_exactly_one),
    check!(concurrent_callers_run_once),
    check!(concurrent_waiters_all_get_the_one_result),
    check!(duplicate_in_flight_is_in_progress),
    check!(waiting_duplicate_gets_the_result),
    check!(forget_unblocks_a_key),
    check!(ttl_expiry_makes_the_key_new),
];

/// Semantics 1 and 2: the first call runs, a retry gets the same value back without running.
async fn fresh_call_runs_then_replays(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::instant();
    let first = charge(&idem, call(&ctx, "o-1", 100), 100, &side_effect)
        .await
        .unwrap();
    assert_eq!(
        first,
        Answered {
            value: "receipt-1-100".into(),
            replayed: false
        }
    );
    for _ in 0..3 {
        let retry = charge(&idem, call(&ctx, "o-1", 100), 100, &side_effect)
            .await
            .unwrap();
        assert_eq!(
            retry,
            Answered {
                value: "receipt-1-100".into(),
                replayed: true
            }
        );
    }
    assert_eq!(side_effect.runs(), 1, "a replay must not run the function");
}

/// Semantic 1 at the store level: of 200 concurrent reservations of one key exactly one wins.
async fn concurrent_reservations_admit_exactly_one(ctx: Context) {
    let key = ctx.key("race");
    let fingerprint = Fingerprint::of("race").unwrap();
    let now = idem_core::SystemClock.now();
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let store = ctx.store().clone();
            let key = key.clone();
            let claim = in_progress(fingerprint, now + Duration::from_secs(60), now);
            tokio::spawn(async move { store.reserve(&key, &claim).await })
        })
        .collect();
    let mut reserved = 0;
    for task in tasks {
        match task.await.unwrap().expect("reserve succeeds") {
            Reservation::Reserved(_) => reserved += 1,
            Reservation::Existing(Record::InProgress(_)) => {}
            other => panic!("unexpected reservation {other:?}"),
        }
    }
    assert_eq!(reserved, 1, "exactly one concurrent reservation must win");
}

/// Semantics 1 and 3: 200 concurrent callers on one key, exactly one execution; the other 199
/// are told the call is in progress while it runs.
async fn concurrent_callers_run_once(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::held();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..200 {
        let (idem, side_effect, done_tx) = (idem.clone(), side_effect.clone(), done_tx.clone());
        let call = call(&ctx, "o-race", 5);
        tokio::spawn(async move {
            let _ = done_tx.send(charge(&idem, call, 5, &side_effect).await);
        });
    }
    let mut conflicts = 0;
    for _ in 0..199 {
        let answer = waiting_for(
            "199 duplicates to be told InProgress (a store that admits one parks it in the held body)",
            PROMPTLY,
            done_rx.recv(),
        );
        match answer.await.expect("every caller answers") {
            Err(Error::InProgress { .. }) => conflicts += 1,
            other => panic!("while the first call runs, others must get InProgress, got {other:?}"),
        }
    }
    side_effect.finish();
    let owner = done_rx.recv().await.expect("the owner answers").unwrap();
    assert_eq!(
        owner,
        Answered {
            value: "receipt-1-5".into(),
            replayed: false
        }
    );
    assert_eq!(conflicts, 199);
    assert_eq!(
        side_effect.runs(),
        1,
        "200 concurrent callers must run the function once"
    );
}

/// Semantic 3 with waiting: 200 concurrent waiting callers all get the single execution's
/// value, and they did wait for it: the body finishes only once some of them are parked.
async fn concurrent_waiters_all_get_the_one_result(ctx: Context) {
    let (idem, parked) = ctx.observed_handle();
    let side_effect = Charge::held();
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            spawn_charge(
                &idem,
                call(&ctx, "o-wait", 5).with_wait(Duration::from_secs(30)),
                5,
                &side_effect,
            )
        })
        .collect();
    side_effect.wait_started().await;
    let waited = parked.acquire_many(100);
    waiting_for("100 duplicates to wait", PROMPTLY, waited)
        .await
        .unwrap()
        .forget();
    side_effect.finish();
    // Each woken waiter reads the record and reserves again: 400 requests or so to one store,
    // which an emulator on a loaded machine takes seconds over. The waiters are given that
    // together, rather than each one PROMPTLY from when the check gets to it.
    let everyone = async {
        let mut executed = Vec::new();
        for task in tasks {
            executed.push(task.await.unwrap().expect("waiters get the result"));
        }
        executed
    };
    let executed = waiting_for("all 200 callers to be answered", PROMPTLY * 3, everyone).await;
    let mut fresh = 0;
    for executed in executed {
        assert_eq!(executed.value, "receipt-1-5");
        fresh += usize::from(!executed.replayed);
    }
    assert_eq!(fresh, 1, "exactly one caller ran the function");
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 3: a duplicate that arrives mid-flight gets `InProgress` (409) at once.
async fn duplicate_in_flight_is_in_progress(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::held();
    let first = spawn_charge(&idem, call(&ctx, "o-2", 7), 7, &side_effect);
    side_effect.wait_started().await;
    let duplicate = charge(&idem, call(&ctx, "o-2", 7), 7, &side_effect);
    let duplicate = waiting_for(
        "the duplicate to be refused (a store that admits it parks it in the held body)",
        PROMPTLY,
        duplicate,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(duplicate, Error::InProgress { .. }),
        "got {duplicate:?}"
    );
    assert_eq!(duplicate.http_status(), 409);
    side_effect.finish();
    assert!(!first.await.unwrap().unwrap().replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// Semantic 3 with `wait`: a duplicate parked while the first call runs gets its value.
async fn waiting_duplicate_gets_the_result(ctx: Context) {
    let idem = ctx.handle();
    let (observed, parked) = ctx.observed_handle();
    let side_effect = Charge::held();
    let first = spawn_charge(&idem, call(&ctx, "o-3", 9), 9, &side_effect);
    side_effect.wait_started().await;
    let waiter = spawn_charge(
        &observed,
        call(&ctx, "o-3", 9).with_wait(Duration::from_secs(20)),
        9,
        &side_effect,
    );
    waiting_for("the duplicate to wait", PROMPTLY, parked.acquire())
        .await
        .unwrap()
        .forget();
    side_effect.finish();
    let waited = waiting_for(
        "the waiter to be woken by the completion, well before its 20 s wait ends",
        PROMPTLY,
        waiter,
    )
    .await
    .unwrap()
    .expect("the waiter gets the first call's value");
    assert_eq!(
        waited,
        Answered {
            value: "receipt-1-9".into(),
            replayed: true
        }
    );
    assert!(!first.await.unwrap().unwrap().replayed);
    assert_eq!(side_effect.runs(), 1);
}

/// `forget` removes any record, corrupt ones included, so the key runs again.
async fn forget_unblocks_a_key(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::instant();
    let key_call = call(&ctx, "o-18", 1);
    if !ctx.target().corrupt(key_call.key()).await {
        charge(&idem, key_call.clone(), 1, &side_effect)
            .await
            .unwrap();
    }
    idem.forget(key_call.key()).await.unwrap();
    assert_eq!(ctx.store().get(key_call.key()).await.unwrap(), None);
    let again = charge(&idem, key_call, 1, &side_effect).await.unwrap();
    assert!(!again.replayed);
}

/// Semantic 8: once the TTL passes, the key counts as new.
async fn ttl_expiry_makes_the_key_new(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let ttl = Duration::from_secs(3600);
    let side_effect = Charge::instant();
    charge(&idem, call(&ctx, "o-14", 1).with_ttl(ttl), 1, &side_effect)
        .await
        .unwrap();
    clock.advance(ttl - Duration::from_secs(1));
    let replay = charge(&idem, call(&ctx, "o-14", 1).with_ttl(ttl), 1, &side_effect)
        .await
        .unwrap();
    assert!(replay.replayed, "within the TTL the result is replayed");
    clock.advance(Duration::from_secs(2));
    let again = charge(&idem, call(&ctx, "o-14", 1).with_ttl(ttl), 1, &side_effect)
        .await
        .unwrap();
    assert_eq!(
        again,
        Answered {
            value: "receipt-2-1".into(),
            replayed: false
        },
        "after the TTL the key is new"
    );
    // A new payload is accepted too once the old record expired.
    clock.advance(ttl + Duration::from_secs(1));
    let other = charge(&idem, call(&ctx, "o-14", 2), 2, &side_effect)
        .await
        .unwrap();
    assert!(!other.replayed);
}
