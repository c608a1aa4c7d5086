//! What the engine knows of a reservation's lease while it holds it.

pub(crate) mod renewal;
pub(crate) mod retry;

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::{
    clock::Clock,
    fingerprint::Fingerprint,
    store::{OwnerToken, Record, Timestamp},
};

/// Why a lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// The store says another owner holds the key (or no one does).
    TakenOver,
    /// No renewal reached the store before the lease passed; another caller may take over.
    Expired,
}

const HELD: u8 = 0;
const TAKEN_OVER: u8 = 1;
const EXPIRED: u8 = 2;

/// The lease deadline as last renewed, and whether the lease is known lost. Shared by the
/// renewal task, the engine and the body's [`CallContext`](crate::CallContext).
pub(crate) struct Lease {
    until: AtomicU64,
    lost: AtomicU8,
    on_loss: Notify,
    /// The caller's clock, by which the deadline passes.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("until", &self.until())
            .field("loss", &self.loss())
            .finish_non_exhaustive()
    }
}

impl Lease {
    pub(crate) fn new(until: Timestamp, clock: Arc<dyn Clock>) -> Self {
        Lease {
            until: AtomicU64::new(until.as_millis()),
            lost: AtomicU8::new(HELD),
            on_loss: Notify::new(),
            clock,
        }
    }

    /// The deadline of the last renewal that reached the store.
    pub(crate) fn until(&self) -> Timestamp {
        Timestamp::from_millis(self.until.load(Ordering::SeqCst))
    }

    /// Records a renewal that reached the store. Returns `true` when it ends a loss by expiry:
    /// the store took the renewal, so no one took the key over meanwhile.
    pub(crate) fn renewed(&self, until: Timestamp) -> bool {
        self.until.store(until.as_millis(), Ordering::SeqCst);
        self.lost
            .compare_exchange(EXPIRED, HELD, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Records the loss and wakes everyone waiting for it. A takeover is final and outranks an
    /// expiry; an expiry only marks a lease still held.
    pub(crate) fn lose(&self, loss: Loss) {
        match loss {
            Loss::TakenOver => self.lost.store(TAKEN_OVER, Ordering::SeqCst),
            Loss::Expired => {
                let _ =
                    self.lost
                        .compare_exchange(HELD, EXPIRED, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
        self.on_loss.notify_waiters();
    }

    pub(crate) fn loss(&self) -> Option<Loss> {
        match self.lost.load(Ordering::SeqCst) {
            TAKEN_OVER => Some(Loss::TakenOver),
            EXPIRED => Some(Loss::Expired),
            _ => None,
        }
    }

    /// Whether the body may know the lease is gone: lost, or its deadline passed by the
    /// caller's clock with no renewal through since. Nothing may have told the engine yet:
    /// a call that does not renew, or a process that was paused past its lease, learns it
    /// from the clock before any renewal is refused.
    pub(crate) fn known_lost(&self) -> bool {
        self.loss().is_some() || self.passed()
    }

    fn passed(&self) -> bool {
        self.clock.now() >= self.until()
    }

    /// Resolves once [`known_lost`](Lease::known_lost) is true.
    pub(crate) async fn lost_or_passed(&self) {
        loop {
            let remaining = self.until().saturating_duration_since(self.clock.now());
            if remaining.is_zero() {
                return;
            }
            if tokio::time::timeout(remaining, self.lost()).await.is_ok() {
                return;
            }
        }
    }

    /// Resolves once the lease is lost.
    pub(crate) async fn lost(&self) {
        loop {
            let notified = self.on_loss.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.loss().is_some() {
                return;
            }
            notified.await;
        }
    }
}

/// What the record read back after the store refused this owner's fenced write (a renewal, a
/// step, a completion) says of the lease: `None` when it is not lost.
///
/// - Still this owner's in-progress record: not lost; the store refused for another reason (a
///   record released with its steps is not renewed).
/// - Completed for this call's fingerprint while the lease held: this call completed it, in
///   the caller's own transaction. No one else could have: no one takes over a held lease.
/// - Completed for this fingerprint after the lease passed: a retry may have taken over and
///   completed it, or this call did; the lease passed either way.
/// - Anything else (another owner, another call's record, no record): taken over.
pub(crate) fn after_refusal(
    record: Option<&Record>,
    owner: &OwnerToken,
    fingerprint: &Fingerprint,
    lease: &Lease,
    now: Timestamp,
) -> Option<Loss> {
    match record {
        Some(Record::InProgress(held)) if held.owner() == owner => None,
        Some(Record::Completed(done)) if done.fingerprint() == fingerprint => {
            (now >= lease.until()).then_some(Loss::Expired)
        }
        _ => Some(Loss::TakenOver),
    }
}
