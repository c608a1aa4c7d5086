//! What the engine knows of a reservation's lease while it holds it.

pub(crate) mod renewal;
pub(crate) mod retry;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
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
/// The key holds this call's own completed record: no one can take it over any more.
const SETTLED: u8 = 3;

/// The lease deadline as last renewed, and whether the lease is known lost. Shared by the
/// renewal task, the engine and the body's [`CallContext`](crate::CallContext).
pub(crate) struct Lease {
    until: AtomicU64,
    lost: AtomicU8,
    on_loss: Notify,
    /// The caller's clock, by which the deadline passes.
    clock: Arc<dyn Clock>,
    /// Whether the body wrote this call's completion in its own transaction.
    completed_in_transaction: AtomicBool,
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
            completed_in_transaction: AtomicBool::new(false),
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

    /// Records that the body wrote this call's completion in its own transaction: once it
    /// commits, a completed record with this call's fingerprint is this call's own.
    pub(crate) fn completed_in_transaction(&self) {
        self.completed_in_transaction.store(true, Ordering::SeqCst);
    }

    /// Whether the body wrote this call's completion in its own transaction
    /// ([`completed_in_transaction`](Lease::completed_in_transaction)).
    pub(crate) fn wrote_completion_in_transaction(&self) -> bool {
        self.completed_in_transaction.load(Ordering::SeqCst)
    }

    /// Records that the key holds this call's own completion: the lease passing by the clock
    /// is no loss then. From an expiry too: a renewal that ends one may not have yet.
    fn settle(&self) {
        let _ = self
            .lost
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |state| {
                matches!(state, HELD | EXPIRED).then_some(SETTLED)
            });
        self.on_loss.notify_waiters();
    }

    fn settled(&self) -> bool {
        self.lost.load(Ordering::SeqCst) == SETTLED
    }

    /// Takes in what the record read back after the store refused this owner's fenced write
    /// says of the lease ([`after_refusal`]): records the loss, or, when the body completed
    /// the record in its own transaction, that the record is this call's own completion.
    /// Without that, a completed record with this fingerprint may be a successor's (after an
    /// operator released the key): no loss is recorded, and the clock still tells of one.
    /// Returns the loss.
    pub(crate) fn learn(
        &self,
        record: Option<&Record>,
        owner: &OwnerToken,
        fingerprint: &Fingerprint,
    ) -> Option<Loss> {
        let loss = after_refusal(record, owner, fingerprint, self, self.clock.now());
        match (loss, record) {
            (Some(loss), _) => self.lose(loss),
            (None, Some(Record::Completed(_)))
                if self.completed_in_transaction.load(Ordering::SeqCst) =>
            {
                self.settle()
            }
            (None, _) => {}
        }
        loss
    }

    pub(crate) fn loss(&self) -> Option<Loss> {
        match self.lost.load(Ordering::SeqCst) {
            TAKEN_OVER => Some(Loss::TakenOver),
            EXPIRED => Some(Loss::Expired),
            _ => None,
        }
    }

    /// Whether the body may know the lease is gone: lost, or its deadline passed by the
    /// caller's clock with no renewal through since (unless settled). Nothing may have told
    /// the engine yet: a call that does not renew, or a process that was paused past its
    /// lease, learns it from the clock before any renewal is refused.
    pub(crate) fn known_lost(&self) -> bool {
        self.loss().is_some() || (self.passed() && !self.settled())
    }

    fn passed(&self) -> bool {
        self.clock.now() >= self.until()
    }

    /// Resolves once [`known_lost`](Lease::known_lost) is true: once settled, only when a
    /// takeover is found after all (the record forgotten or expired, and taken).
    pub(crate) async fn lost_or_passed(&self) {
        loop {
            if self.settled() {
                return self.lost().await;
            }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::store::{Completed, InProgress, Outcome};

    const LEASE: Duration = Duration::from_secs(30);

    fn lease_on(clock: &ManualClock) -> Lease {
        Lease::new(clock.now() + LEASE, Arc::new(clock.clone()))
    }

    #[test]
    fn a_lease_that_finds_its_own_completion_does_not_pass_by_the_clock() {
        let clock = ManualClock::new();
        let lease = lease_on(&clock);
        let (owner, fingerprint) = (OwnerToken::generate(), Fingerprint::of("o1").unwrap());
        let done = completed(&clock, fingerprint);
        lease.completed_in_transaction();
        assert_eq!(lease.learn(Some(&done), &owner, &fingerprint), None);
        clock.advance(LEASE * 2);
        assert!(!lease.known_lost(), "settled: no one can take the key over");
    }

    #[test]
    fn a_completion_the_body_did_not_write_may_be_a_successors() {
        let clock = ManualClock::new();
        let lease = lease_on(&clock);
        let (owner, fingerprint) = (OwnerToken::generate(), Fingerprint::of("o1").unwrap());
        let done = completed(&clock, fingerprint);
        assert_eq!(lease.learn(Some(&done), &owner, &fingerprint), None);
        clock.advance(LEASE);
        assert!(lease.known_lost(), "not settled: the clock still tells");
    }

    #[tokio::test]
    async fn a_settled_lease_still_wakes_its_waiters_on_a_takeover() {
        let clock = ManualClock::new();
        let lease = Arc::new(lease_on(&clock));
        let (owner, fingerprint) = (OwnerToken::generate(), Fingerprint::of("o1").unwrap());
        lease.completed_in_transaction();
        lease.learn(Some(&completed(&clock, fingerprint)), &owner, &fingerprint);
        let waiting = tokio::spawn({
            let lease = lease.clone();
            async move { lease.lost_or_passed().await }
        });
        tokio::task::yield_now().await;
        let theirs = Record::InProgress(InProgress::new(
            OwnerToken::generate(),
            fingerprint,
            lease.until(),
        ));
        assert_eq!(
            lease.learn(Some(&theirs), &owner, &fingerprint),
            Some(Loss::TakenOver)
        );
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the waiter hears of the takeover")
            .unwrap();
    }

    #[test]
    fn a_lease_whose_expiry_a_renewal_is_ending_settles_too() {
        let clock = ManualClock::new();
        let lease = lease_on(&clock);
        let (owner, fingerprint) = (OwnerToken::generate(), Fingerprint::of("o1").unwrap());
        lease.lose(Loss::Expired);
        lease
            .until
            .store((clock.now() + LEASE).as_millis(), Ordering::SeqCst);
        lease.completed_in_transaction();
        lease.learn(Some(&completed(&clock, fingerprint)), &owner, &fingerprint);
        assert!(
            !lease.renewed(clock.now() + LEASE),
            "settled, not an expiry ended"
        );
        clock.advance(LEASE * 2);
        assert!(!lease.known_lost());
    }

    fn completed(clock: &ManualClock, fingerprint: Fingerprint) -> Record {
        Record::Completed(Completed::new(
            fingerprint,
            Outcome::ok(b"\"placed\"".to_vec()),
            clock.now() + Duration::from_secs(3600),
        ))
    }

    #[test]
    fn a_lease_still_held_in_progress_passes_by_the_clock() {
        let clock = ManualClock::new();
        let lease = lease_on(&clock);
        let (owner, fingerprint) = (OwnerToken::generate(), Fingerprint::of("o1").unwrap());
        let held = Record::InProgress(InProgress::new(owner.clone(), fingerprint, lease.until()));
        assert_eq!(lease.learn(Some(&held), &owner, &fingerprint), None);
        assert!(!lease.known_lost());
        clock.advance(LEASE);
        assert!(lease.known_lost(), "nothing renewed it: the lease passed");
    }

    #[test]
    fn another_owners_record_is_a_takeover() {
        let clock = ManualClock::new();
        let lease = lease_on(&clock);
        let fingerprint = Fingerprint::of("o1").unwrap();
        let theirs = Record::InProgress(InProgress::new(
            OwnerToken::generate(),
            fingerprint,
            lease.until(),
        ));
        let mine = OwnerToken::generate();
        assert_eq!(
            lease.learn(Some(&theirs), &mine, &fingerprint),
            Some(Loss::TakenOver)
        );
        assert!(lease.known_lost());
    }
}
