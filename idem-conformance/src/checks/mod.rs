//! The conformance checks. Each panics with a message saying which semantic broke.

mod aborts;
mod call_context;
mod edges;
mod faults;
mod steps;

/// Every check: this file's, then each theme's.
pub(super) fn all() -> Vec<crate::Check> {
    [
        CHECKS,
        aborts::CHECKS,
        call_context::CHECKS,
        edges::CHECKS,
        faults::CHECKS,
        steps::CHECKS,
    ]
    .concat()
}

/// How long a check waits for an answer that a correct store gives at once (or within its
/// polling interval): past it, the store is taken to have admitted a duplicate into a held
/// body, or never to wake a waiter.
pub(crate) const PROMPTLY: Duration = Duration::from_secs(10);

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::probes::{Held, Probe};
use super::waiting_for;
use super::Context;
use idem_core::Clock as _;
use idem_core::{
    Call, Claim, Completed, Error, Executed, Fingerprint, Idempotency, InProgress, ManualClock,
    Outcome, OwnerToken, Record, Reservation, Store, StoreError, Timestamp,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(fresh_call_runs_then_replays),
    check!(concurrent_reservations_admit_exactly_one),
    check!(concurrent_callers_run_once),
    check!(concurrent_waiters_all_get_the_one_result),
    check!(duplicate_in_flight_is_in_progress),
    check!(waiting_duplicate_gets_the_result),
    check!(mismatch_on_completed_record),
    check!(mismatch_on_in_progress_record),
    check!(mismatch_on_lease_passed_record),
    check!(mismatch_while_waiting),
    check!(error_releases_the_key),
    check!(stored_error_is_replayed),
    check!(lease_is_renewed_while_running),
    check!(lease_takeover_fences_the_stale_owner),
    check!(only_the_owner_completes_releases_or_renews),
    check!(ttl_expiry_makes_the_key_new),
    check!(store_failure_fails_closed),
    check!(undecodable_result_is_a_codec_error),
    check!(corrupt_record_is_an_error_not_a_panic),
    check!(forget_unblocks_a_key),
    check!(lost_completion_answer_is_retried),
    check!(cancellation_during_reserve_releases_the_key),
    check!(cancellation_during_completion_still_records),
    check!(unserialisable_outcome_keeps_the_key),
    check!(abandoned_reservation_is_free_for_anyone),
    check!(lease_is_renewed_while_the_body_blocks_its_thread),
];

/// A side effect that counts its runs and can be held mid-flight.
pub(crate) struct Charge {
    name: &'static str,
    runs: AtomicUsize,
    started: Semaphore,
    proceed: Semaphore,
    hold: bool,
}

impl Charge {
    fn new(hold: bool) -> Arc<Self> {
        Self::named("receipt", hold)
    }

    /// A charge whose receipts start with `name`, to tell two side effects' receipts apart.
    pub(crate) fn named(name: &'static str, hold: bool) -> Arc<Self> {
        Arc::new(Charge {
            name,
            runs: AtomicUsize::new(0),
            started: Semaphore::new(0),
            proceed: Semaphore::new(0),
            hold,
        })
    }

    pub(crate) fn instant() -> Arc<Self> {
        Self::new(false)
    }

    /// A charge that, once started, waits for [`Charge::finish`].
    pub(crate) fn held() -> Arc<Self> {
        Self::new(true)
    }

    pub(crate) async fn run(&self, amount: u64) -> String {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.started.add_permits(1);
        if self.hold {
            self.proceed
                .acquire()
                .await
                .expect("semaphore never closed")
                .forget();
        }
        format!("{}-{run}-{amount}", self.name)
    }

    /// Waits for the body to start, which a store that refuses a free key never lets it.
    pub(crate) async fn wait_started(&self) {
        waiting_for("the body to start", PROMPTLY, self.started.acquire())
            .await
            .expect("semaphore never closed")
            .forget();
    }

    pub(crate) fn finish(&self) {
        self.proceed.add_permits(1);
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

pub(crate) fn call(ctx: &Context, order: &str, amount: u64) -> Call {
    let key = ctx
        .handle()
        .key("charge")
        .part(order)
        .finish()
        .expect("short keys are valid");
    Call::new(
        key,
        Fingerprint::of(&(order, amount)).expect("plain values fingerprint"),
    )
}

pub(crate) async fn charge(
    idem: &Idempotency,
    call: Call,
    amount: u64,
    side_effect: &Charge,
) -> Result<Executed<String>, Error> {
    idem.run(call, async { Ok(side_effect.run(amount).await) })
        .await
}

pub(crate) fn spawn_charge(
    idem: &Idempotency,
    call: Call,
    amount: u64,
    side_effect: &Arc<Charge>,
) -> tokio::task::JoinHandle<Result<Executed<String>, Error>> {
    let idem = idem.clone();
    let side_effect = side_effect.clone();
    tokio::spawn(async move { charge(&idem, call, amount, &side_effect).await })
}

fn in_progress(fingerprint: Fingerprint, lease_until: Timestamp, now: Timestamp) -> Claim {
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

/// Semantics 1 and 2: the first call runs, a retry gets the same value back without running.
async fn fresh_call_runs_then_replays(ctx: Context) {
    let idem = ctx.handle();
    let side_effect = Charge::instant();
    let first = charge(&idem, call(&ctx, "o-1", 100), 100, &side_effect)
        .await
        .unwrap();
    assert_eq!(
        first,
        Executed {
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
            Executed {
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
        Executed {
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
    let mut fresh = 0;
    for task in tasks {
        let executed = waiting_for("a waiter to be woken", PROMPTLY, task)
            .await
            .unwrap()
            .expect("waiters get the result");
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
        Executed {
            value: "receipt-1-9".into(),
            replayed: true
        }
    );
    assert!(!first.await.unwrap().unwrap().replayed);
    assert_eq!(side_effect.runs(), 1);
}

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

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
enum PayError {
    Declined,
    Idem(String),
}

impl From<Error> for PayError {
    fn from(error: Error) -> Self {
        PayError::Idem(error.to_string())
    }
}

/// Semantic 5: an `Err` releases the key; the corrected retry runs.
async fn error_releases_the_key(ctx: Context) {
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    let declined: Result<Executed<String>, PayError> = idem
        .run(call(&ctx, "o-8", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Err(PayError::Declined)
        })
        .await;
    assert_eq!(declined, Err(PayError::Declined));
    assert_eq!(
        ctx.store().get(call(&ctx, "o-8", 1).key()).await.unwrap(),
        None,
        "an Err must release the key"
    );
    let retried: Result<Executed<String>, PayError> = idem
        .run(call(&ctx, "o-8", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("ok".to_string())
        })
        .await;
    assert_eq!(
        retried,
        Ok(Executed {
            value: "ok".into(),
            replayed: false
        })
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// Semantic 5 with a `store_err` policy: a final error is stored and replayed.
async fn stored_error_is_replayed(ctx: Context) {
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    for _ in 0..3 {
        let result: Result<Executed<String>, PayError> = idem
            .run_storing_errors(call(&ctx, "o-9", 1), |e| *e == PayError::Declined, async {
                runs.fetch_add(1, Ordering::SeqCst);
                Err(PayError::Declined)
            })
            .await;
        assert_eq!(result, Err(PayError::Declined));
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a stored error must be replayed, not re-run"
    );
}

/// Asserts that `error` says the body ran and its outcome was refused because another owner
/// holds the key.
pub(crate) fn assert_lease_lost_after_run(error: &Error) {
    assert!(
        matches!(error, Error::NotRecorded { cause, .. } if matches!(**cause, Error::LeaseLost { .. })),
        "a stale owner must get NotRecorded caused by LeaseLost, got {error:?}"
    );
    assert!(error.ran_without_record(), "{error}");
    assert!(!error.is_retryable(), "{error}");
    assert_eq!(error.http_status(), 500);
}

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
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let lease = Duration::from_secs(60);
    let stale_effect = Charge::held();
    let stale = spawn_charge(
        &idem,
        call(&ctx, "o-13", 1).with_lease(lease),
        1,
        &stale_effect,
    );
    stale_effect.wait_started().await;
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
        Executed {
            value: "new-1-1".into(),
            replayed: false
        }
    );
    let replay = charge(&idem, call(&ctx, "o-13", 1), 1, &Charge::instant())
        .await
        .unwrap();
    assert_eq!(
        replay,
        Executed {
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
        Outcome::Ok(b"\"x\"".to_vec()),
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
        Executed {
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

/// A stored result that no longer decodes as the function's type is a codec error.
///
/// The store only has to hand back the bytes it was given, which every other check needs too;
/// the decoding is the engine's.
async fn undecodable_result_is_a_codec_error(ctx: Context) {
    let idem = ctx.handle();
    let stored: Executed<String> = idem
        .run(call(&ctx, "o-16", 1), async {
            Ok::<_, Error>("not a number".to_string())
        })
        .await
        .unwrap();
    assert!(!stored.replayed);
    let err = idem
        .run(call(&ctx, "o-16", 1), async { Ok::<u64, Error>(1) })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Codec(_)), "got {err:?}");
}

/// A record the store can't decode yields `CorruptRecord`, never a panic, and never runs the
/// function.
async fn corrupt_record_is_an_error_not_a_panic(ctx: Context) {
    let key_call = call(&ctx, "o-17", 1);
    if !ctx.target().corrupt(key_call.key()).await {
        eprintln!("conformance: this store cannot hold a malformed record; check passes vacuously");
        return;
    }
    let idem = ctx.handle();
    let side_effect = Charge::instant();
    let err = charge(&idem, key_call, 1, &side_effect).await.unwrap_err();
    assert!(matches!(err, Error::CorruptRecord { .. }), "got {err:?}");
    assert_eq!(side_effect.runs(), 0);
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
        Executed {
            value: first.value,
            replayed: true
        }
    );
    assert_eq!(side_effect.runs(), 1);
}

/// Starts a call (with a 60 s lease) through a probe that holds the request `what`, drops the
/// call while it is held, and returns a retry's result: the retry waits 20 s, less than the
/// lease, so it succeeds only if the dropped call released or completed the key.
async fn retry_after_dropping_during(
    ctx: &Context,
    what: Held,
    order: &str,
    side_effect: &Arc<Charge>,
) -> Result<Executed<String>, Error> {
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
        Executed {
            value: "receipt-1-1".into(),
            replayed: true
        }
    );
    assert_eq!(side_effect.runs(), 1);
}

/// An `Ok` value that can't be serialised after the body ran keeps the key reserved, so a retry
/// is told "in progress" instead of running the side effect again.
async fn unserialisable_outcome_keeps_the_key(ctx: Context) {
    #[derive(Debug)]
    struct Unserialisable;
    impl serde::Serialize for Unserialisable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("not today"))
        }
    }
    impl<'de> serde::Deserialize<'de> for Unserialisable {
        fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
            Ok(Unserialisable)
        }
    }
    let idem = ctx.handle();
    let runs = AtomicUsize::new(0);
    let run = || {
        idem.run(call(&ctx, "o-22", 1), async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Error>(Unserialisable)
        })
    };
    let err = run().await.unwrap_err();
    assert!(
        matches!(&err, Error::NotRecorded { cause, .. } if matches!(**cause, Error::Codec(_))),
        "got {err:?}"
    );
    assert!(err.ran_without_record() && !err.is_retryable());
    assert!(matches!(run().await, Err(Error::InProgress { .. })));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the side effect must not run again"
    );
}

/// An in-progress record whose lease passed more than [`LEASE_GRACE`](idem_core::LEASE_GRACE) ago
/// is abandoned: a caller with other arguments may then take the key over, and the stale owner
/// is fenced off.
async fn abandoned_reservation_is_free_for_anyone(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let lease = Duration::from_secs(60);
    let stale_effect = Charge::held();
    let stale = spawn_charge(
        &idem,
        call(&ctx, "o-23", 1).with_lease(lease),
        1,
        &stale_effect,
    );
    stale_effect.wait_started().await;
    clock.advance(lease + idem_core::LEASE_GRACE - Duration::from_secs(1));
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
        Executed {
            value: "receipt-1-2".into(),
            replayed: false
        }
    );
    stale_effect.finish();
    let refused = stale.await.unwrap().unwrap_err();
    assert_lease_lost_after_run(&refused);
}

/// The lease is renewed from a task of its own: a body that holds its worker thread for three
/// leases still keeps the key, and a duplicate meanwhile is told "in progress".
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
                // Holding the worker thread is the point here (bounded, should the check fail).
                let _ = released.recv_timeout(PROMPTLY);
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
