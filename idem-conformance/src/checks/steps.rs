//! Recovery points: what a store keeps of a call's finished steps, so that a retry after a crash
//! or an error resumes after them instead of running them again.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{call, Context, PROMPTLY};
use crate::waiting_for;
use idem_core::Clock as _;
use idem_core::{
    step,
    store::{Claim, InProgress, OwnerToken, Record, Reservation, Timestamp, LEASE_GRACE},
    Answered, Call, Error, Fingerprint, Idempotency, Key, ManualClock, StoreError, SystemClock,
};

/// This file's checks. Check functions are private, so one left out of this list is dead code.
pub(super) const CHECKS: &[crate::Check] = &[
    check!(a_takeover_resumes_after_the_recorded_steps),
    check!(a_step_is_recorded_before_it_returns),
    check!(a_stale_owners_step_is_refused),
    check!(a_released_record_keeps_its_steps),
    check!(a_released_record_is_not_renewed),
    check!(steps_hold_the_key_until_their_ttl),
    check!(steps_past_their_ttl_are_not_replayed),
];

pub(super) const LEASE: Duration = Duration::from_secs(30);

/// Where a checkout stops after its first step.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// It runs to the end.
    Never,
    /// It fails, as a declined ledger would.
    Fail,
    /// It never returns, until the caller drops it: a crash, as far as the key can tell.
    Hang,
}

/// What a checkout body can fail with.
#[derive(Debug)]
pub(super) enum ShopError {
    Declined,
    Idem(Error),
}

impl From<Error> for ShopError {
    fn from(error: Error) -> Self {
        ShopError::Idem(error)
    }
}

/// A checkout's two side effects, counted, and the attempt each run saw.
pub(super) struct Checkout {
    charges: AtomicUsize,
    ledgers: AtomicUsize,
    attempt: AtomicU32,
    stopped: Semaphore,
}

impl Checkout {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Checkout {
            charges: AtomicUsize::new(0),
            ledgers: AtomicUsize::new(0),
            attempt: AtomicU32::new(0),
            stopped: Semaphore::new(0),
        })
    }

    /// Runs the checkout of `call` as steps `charge` then `ledger`, stopping after the
    /// charge as `stop` says.
    pub(super) async fn run(
        &self,
        idem: &Idempotency,
        call: Call,
        stop: Stop,
    ) -> Result<Answered<(String, u64)>, ShopError> {
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
    pub(super) async fn crash_after_charge(self: &Arc<Self>, idem: &Idempotency, call: Call) {
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

    pub(super) fn charges(&self) -> usize {
        self.charges.load(Ordering::SeqCst)
    }

    pub(super) fn ledgers(&self) -> usize {
        self.ledgers.load(Ordering::SeqCst)
    }
}

pub(super) fn checkout_call(ctx: &Context, order: &str, amount: u64) -> Call {
    call(ctx, order, amount).with_lease(LEASE)
}

pub(super) fn claim(what: &str, lease_until: Timestamp, now: Timestamp) -> Claim {
    let fingerprint = Fingerprint::of(what).expect("text fingerprints");
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
}

pub(super) fn assert_ran_once(checkout: &Checkout, what: &str) {
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
pub(super) async fn released_with_a_step(ctx: &Context, name: &str) -> (Key, Timestamp, Timestamp) {
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
