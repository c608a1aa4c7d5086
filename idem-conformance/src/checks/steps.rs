//! Recovery points: what a store keeps of a call's finished steps, so that a retry after a crash
//! or an error resumes after them instead of running them again.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, Context, PROMPTLY};
use crate::probes::Probe;
use crate::waiting_for;
use idem_core::Clock as _;
use idem_core::{
    step, Call, Claim, Error, Executed, Fingerprint, Idempotency, InProgress, Key, ManualClock,
    OwnerToken, Record, Reservation, StoreError, SystemClock, Timestamp, LEASE_GRACE,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_takeover_resumes_after_the_recorded_steps),
    check!(a_step_is_recorded_before_it_returns),
    check!(a_stale_owners_step_is_refused),
    check!(a_released_record_keeps_its_steps),
    check!(a_released_record_is_not_renewed),
    check!(an_error_after_a_step_keeps_the_key_for_the_same_call),
    check!(steps_hold_the_key_until_their_ttl),
    check!(steps_past_their_ttl_are_not_replayed),
    check!(an_error_before_any_step_releases_the_key),
    check!(a_step_name_used_twice_is_an_error),
    check!(an_undecodable_step_value_is_a_codec_error),
    check!(a_failed_step_write_is_retried),
    check!(a_step_that_cannot_be_recorded_holds_the_key),
    check!(a_failed_step_can_be_tried_again_in_the_same_run),
    check!(a_refused_step_write_fires_lease_lost),
];

const LEASE: Duration = Duration::from_secs(30);

/// Where a checkout stops after its first step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// It runs to the end.
    Never,
    /// It fails, as a declined ledger would.
    Fail,
    /// It never returns, until the caller drops it: a crash, as far as the key can tell.
    Hang,
}

/// What a checkout body can fail with.
#[derive(Debug)]
enum ShopError {
    Declined,
    Idem(Error),
}

impl From<Error> for ShopError {
    fn from(error: Error) -> Self {
        ShopError::Idem(error)
    }
}

/// A checkout's two side effects, counted, and the attempt each run saw.
struct Checkout {
    charges: AtomicUsize,
    ledgers: AtomicUsize,
    attempt: AtomicU32,
    stopped: Semaphore,
}

impl Checkout {
    fn new() -> Arc<Self> {
        Arc::new(Checkout {
            charges: AtomicUsize::new(0),
            ledgers: AtomicUsize::new(0),
            attempt: AtomicU32::new(0),
            stopped: Semaphore::new(0),
        })
    }

    /// Runs the checkout of `call` as steps `charge` then `ledger`, stopping after the
    /// charge as `stop` says.
    async fn run(
        &self,
        idem: &Idempotency,
        call: Call,
        stop: Stop,
    ) -> Result<Executed<(String, u64)>, ShopError> {
        idem.run(call, async {
            let context = idem_core::context().expect("inside the body");
            self.attempt.store(context.attempt(), Ordering::SeqCst);
            let charge = step("charge", async {
                let run = self.charges.fetch_add(1, Ordering::SeqCst) + 1;
                Ok::<_, ShopError>(format!("ch_{run}"))
            })
            .await?;
            self.stopped.add_permits(1);
            match stop {
                Stop::Never => {}
                Stop::Fail => return Err(ShopError::Declined),
                Stop::Hang => std::future::pending::<()>().await,
            }
            let entry = step("ledger", async {
                Ok::<_, ShopError>(self.ledgers.fetch_add(1, Ordering::SeqCst) as u64 + 1)
            })
            .await?;
            Ok((charge, entry))
        })
        .await
    }

    /// Runs a checkout that hangs after its charge, then drops it: the key stays held by a
    /// record with the charge step, as after a crash.
    async fn crash_after_charge(self: &Arc<Self>, idem: &Idempotency, call: Call) {
        let task = {
            let (checkout, idem) = (self.clone(), idem.clone());
            tokio::spawn(async move { checkout.run(&idem, call, Stop::Hang).await })
        };
        waiting_for("the charge step", PROMPTLY, self.stopped.acquire())
            .await
            .expect("semaphore never closed")
            .forget();
        task.abort();
        assert!(task.await.is_err(), "the hanging checkout was dropped");
    }

    fn charges(&self) -> usize {
        self.charges.load(Ordering::SeqCst)
    }

    fn ledgers(&self) -> usize {
        self.ledgers.load(Ordering::SeqCst)
    }
}

fn checkout_call(ctx: &Context, order: &str, amount: u64) -> Call {
    call(ctx, order, amount).with_lease(LEASE)
}

fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

fn assert_ran_once(checkout: &Checkout, what: &str) {
    assert_eq!(checkout.charges(), 1, "{what}: the charge step ran again");
    assert_eq!(
        checkout.ledgers(),
        1,
        "{what}: the ledger step must run once"
    );
}

/// A retry that takes over after the owner crashed between two steps replays the first from
/// the record and runs only the second.
async fn a_takeover_resumes_after_the_recorded_steps(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let checkout = Checkout::new();
    checkout
        .crash_after_charge(&idem, checkout_call(&ctx, "s-1", 10))
        .await;
    clock.advance(LEASE + Duration::from_secs(1));
    let resumed = checkout
        .run(&idem, checkout_call(&ctx, "s-1", 10), Stop::Never)
        .await
        .expect("the retry takes over and resumes");
    assert_eq!(
        resumed.value,
        ("ch_1".to_string(), 1),
        "the charge comes from the record"
    );
    assert_ran_once(&checkout, "a takeover after a crash");
    assert_eq!(checkout.attempt.load(Ordering::SeqCst), 2);
    let replayed = checkout
        .run(&idem, checkout_call(&ctx, "s-1", 10), Stop::Never)
        .await
        .expect("the outcome is stored");
    assert!(replayed.replayed);
    assert_eq!(replayed.value, resumed.value);
}

/// A step's value is in the store by the time `step` returns, so a crash right after it
/// cannot lose it.
async fn a_step_is_recorded_before_it_returns(ctx: Context) {
    let idem = ctx.handle();
    let call = checkout_call(&ctx, "s-2", 10);
    let key = call.key().clone();
    let store = ctx.store().clone();
    let mut seen = None;
    idem.run(call, async {
        step("charge", async { Ok::<_, Error>("ch_1".to_string()) }).await?;
        seen = Some(store.get(&key).await.expect("the store answers"));
        Ok::<_, Error>(())
    })
    .await
    .expect("the call completes");
    match seen.flatten() {
        Some(Record::InProgress(held)) => assert_eq!(
            held.steps().get("charge"),
            Some(&br#""ch_1""#[..]),
            "the record holds the step's serialised value"
        ),
        other => panic!("expected the in-progress record with the step, found {other:?}"),
    }
}

/// Fencing covers steps: once another caller took the key over, the stale owner's step is
/// refused and leaves the new owner's record as it was; the new owner sees the steps recorded
/// before the takeover.
async fn a_stale_owners_step_is_refused(ctx: Context) {
    let key = ctx.key("stale-step");
    let now = SystemClock.now();
    let stale = claim("checkout", now + Duration::from_secs(1), now);
    let stale_owner = stale.record().owner();
    ctx.store().reserve(&key, &stale).await.unwrap();
    let kept = now + Duration::from_secs(3600);
    ctx.store()
        .record_step(&key, stale_owner, "charge", b"\"ch_1\"", kept)
        .await
        .expect("the owner records its step");
    let later = now + Duration::from_secs(2);
    let retry = claim("checkout", later + LEASE, later);
    let taken = match ctx.store().reserve(&key, &retry).await.unwrap() {
        Reservation::TookOver { record, .. } => record,
        other => panic!("the same call takes over a passed lease, got {other:?}"),
    };
    assert_eq!(
        taken.steps().get("charge"),
        Some(&b"\"ch_1\""[..]),
        "a takeover by the same call carries the recorded steps"
    );
    let refused = ctx
        .store()
        .record_step(&key, stale_owner, "ledger", b"7", kept)
        .await;
    assert!(
        matches!(refused, Err(StoreError::LeaseLost)),
        "a stale owner's step must be refused, got {refused:?}"
    );
    match ctx.store().get(&key).await.unwrap() {
        Some(Record::InProgress(held)) => {
            assert_eq!(held.owner(), retry.record().owner());
            assert_eq!(
                held.steps().get("ledger"),
                None,
                "the stale step was written"
            );
            assert_eq!(held.steps().len(), 1);
        }
        other => panic!("expected the new owner's record, found {other:?}"),
    }
}

/// Reserves `name`'s key for a `checkout` call, records its `charge` step (kept an hour), and
/// releases it. Returns the key, the time of the reservation and the steps' `kept_until`.
async fn released_with_a_step(ctx: &Context, name: &str) -> (Key, Timestamp, Timestamp) {
    let key = ctx.key(name);
    let now = SystemClock.now();
    let first = claim("checkout", now + LEASE, now);
    let owner = first.record().owner();
    ctx.store().reserve(&key, &first).await.unwrap();
    let kept = now + Duration::from_secs(3600);
    ctx.store()
        .record_step(&key, owner, "charge", b"\"ch_1\"", kept)
        .await
        .unwrap();
    ctx.store().release(&key, owner).await.unwrap();
    (key, now, kept)
}

/// At the store: releasing a record with steps keeps it, with its lease ended; another call is
/// refused even after the abandonment grace, and the same call takes it over with its steps.
async fn a_released_record_keeps_its_steps(ctx: Context) {
    let (key, now, kept) = released_with_a_step(&ctx, "released-steps").await;
    match ctx.store().get(&key).await.unwrap() {
        Some(Record::InProgress(held)) => {
            assert!(held.is_released(), "the lease must end: {held:?}");
            assert_eq!(held.steps().get("charge"), Some(&b"\"ch_1\""[..]));
            assert_eq!(held.steps().kept_until(), kept);
        }
        other => panic!("a record with steps must survive its release, found {other:?}"),
    }
    let much_later = now + LEASE + LEASE_GRACE + Duration::from_secs(1);
    let other_call = claim("another checkout", much_later + LEASE, much_later);
    assert!(
        matches!(
            ctx.store().reserve(&key, &other_call).await.unwrap(),
            Reservation::Existing(Record::InProgress(_))
        ),
        "steps hold the key against another call until they expire"
    );
    let same_call = claim("checkout", now + LEASE, now + Duration::from_millis(1));
    match ctx.store().reserve(&key, &same_call).await.unwrap() {
        Reservation::TookOver { record, .. } => {
            assert_eq!(record.steps().get("charge"), Some(&b"\"ch_1\""[..]));
            assert_eq!(record.attempt(), 2);
        }
        other => panic!("the same call takes a released record over at once, got {other:?}"),
    }
}

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

/// Steps hold the key for a TTL after the latest one; after it, another call may use the key
/// and starts with no steps.
async fn steps_hold_the_key_until_their_ttl(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let ttl = Duration::from_secs(3600);
    let checkout = Checkout::new();
    let failed = checkout
        .run(
            &idem,
            checkout_call(&ctx, "s-5", 10).with_ttl(ttl),
            Stop::Fail,
        )
        .await;
    assert!(matches!(failed, Err(ShopError::Declined)), "{failed:?}");
    clock.advance(ttl + LEASE_GRACE + Duration::from_secs(1));
    let other = checkout
        .run(&idem, checkout_call(&ctx, "s-5", 99), Stop::Never)
        .await
        .expect("expired steps free the key for another call");
    assert_eq!(
        other.value,
        ("ch_2".to_string(), 1),
        "another call starts with no steps"
    );
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

/// A renewal that arrives after the release of a record with steps must not bring its lease
/// back: the same call's retry would be told "in progress" for a whole lease.
async fn a_released_record_is_not_renewed(ctx: Context) {
    let (key, now, _) = released_with_a_step(&ctx, "released-renewal").await;
    let owner = match ctx.store().get(&key).await.unwrap() {
        Some(Record::InProgress(held)) => held.owner().clone(),
        other => panic!("expected the released record, found {other:?}"),
    };
    let late = ctx.store().renew(&key, &owner, now + LEASE).await;
    assert!(
        matches!(late, Err(StoreError::LeaseLost)),
        "a released record must refuse a renewal, got {late:?}"
    );
    match ctx.store().get(&key).await.unwrap() {
        Some(Record::InProgress(held)) => assert!(held.is_released(), "{held:?}"),
        other => panic!("expected the released record, found {other:?}"),
    }
}

/// After their TTL steps count for nothing, as an expired outcome does: the same call's retry
/// runs them again instead of replaying values a TTL old (or failing on them forever, should
/// they no longer decode).
async fn steps_past_their_ttl_are_not_replayed(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let ttl = Duration::from_secs(3600);
    let checkout = Checkout::new();
    let call = || checkout_call(&ctx, "s-11", 10).with_ttl(ttl);
    let failed = checkout.run(&idem, call(), Stop::Fail).await;
    assert!(matches!(failed, Err(ShopError::Declined)), "{failed:?}");
    clock.advance(ttl + Duration::from_secs(1));
    let again = checkout
        .run(&idem, call(), Stop::Never)
        .await
        .expect("the same call runs again");
    assert_eq!(
        again.value,
        ("ch_2".to_string(), 1),
        "a stale charge was replayed"
    );
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
/// the body at once: `lease_lost()` fires with the step's `NotRecorded`.
async fn a_refused_step_write_fires_lease_lost(ctx: Context) {
    let clock = ManualClock::new();
    let idem = ctx.handle_with(clock.clone(), ctx.store().clone());
    let call = || checkout_call(&ctx, "s-15", 10);
    let stale = idem
        .run(call(), async {
            // The lease passes and a retry takes the key over and finishes first.
            clock.advance(LEASE + Duration::from_millis(1));
            let retry = idem
                .run(call(), async { Ok::<_, Error>("retry".to_owned()) })
                .await
                .unwrap();
            assert!(!retry.replayed, "the retry took the key over");
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
