//! The conformance checks, one file per theme, and the fixtures they share. Each check panics
//! with a message saying which semantic broke.

mod aborts;
mod call_context;
mod cancellation;
mod completion_faults;
mod edges;
mod errors;
mod inventory;
mod leases;
mod lookups;
mod mismatches;
mod outcomes;
mod oversized;
mod presence;
mod purge;
mod read_back;
mod renewal_faults;
mod replays;
mod step_failures;
mod steps;
mod waits;

/// Every check, theme by theme.
pub(super) fn all() -> Vec<crate::Check> {
    [
        replays::CHECKS,
        lookups::CHECKS,
        outcomes::CHECKS,
        mismatches::CHECKS,
        errors::CHECKS,
        leases::CHECKS,
        cancellation::CHECKS,
        aborts::CHECKS,
        call_context::CHECKS,
        edges::CHECKS,
        waits::CHECKS,
        completion_faults::CHECKS,
        renewal_faults::CHECKS,
        read_back::CHECKS,
        steps::CHECKS,
        step_failures::CHECKS,
        inventory::CHECKS,
        purge::CHECKS,
        presence::CHECKS,
        oversized::CHECKS,
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

use super::waiting_for;
use super::Context;
use idem_core::{
    store::{Claim, InProgress, OwnerToken, Timestamp},
    Answered, Call, Error, Fingerprint, Idempotency,
};

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
) -> Result<Answered<String>, Error> {
    idem.run(call, async { Ok(side_effect.run(amount).await) })
        .await
}

pub(crate) fn spawn_charge(
    idem: &Idempotency,
    call: Call,
    amount: u64,
    side_effect: &Arc<Charge>,
) -> tokio::task::JoinHandle<Result<Answered<String>, Error>> {
    let idem = idem.clone();
    let side_effect = side_effect.clone();
    tokio::spawn(async move { charge(&idem, call, amount, &side_effect).await })
}

pub(crate) fn in_progress(
    fingerprint: Fingerprint,
    lease_until: Timestamp,
    now: Timestamp,
) -> Claim {
    let record = InProgress::new(OwnerToken::generate(), fingerprint, lease_until)
        .with_fencing_token(idem_core::store::propose_fencing_token(now));
    Claim::new(record, now)
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
