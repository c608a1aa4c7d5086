//! A store that wraps the store under test to observe it or to inject a fault the real store
//! can't produce on demand. Everything else goes to the real store.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::{Intercepted, Interceptor};
use idem_core::{
    store::{Claim, Completed, OwnerToken, Reservation, Store},
    Key, ManualClock, StoreError,
};

pub(crate) struct Probe {
    inner: Arc<dyn Store>,
    /// Gets a permit each time a caller starts waiting in `changed`.
    parked: Arc<Semaphore>,
    /// Fail every reservation as an unreachable backend would.
    unreachable: bool,
    /// How many completions still lose their answer: applied, then reported as failed.
    lost_completions: AtomicUsize,
    /// Moves this clock on by the given time when a completion's answer is lost: an answer
    /// that came back too late, after the lease passed.
    lost_answer_wait: Option<(ManualClock, Duration)>,
    /// Holds the first reserve after it is applied, or the first complete or renewal before it
    /// is sent.
    hold: Option<Hold>,
    /// Fails completions without applying them, moving this clock on by the given time each
    /// time, as an outage that lasts...
    outage: Option<(ManualClock, Duration)>,
    /// ...for this many more completions.
    outage_left: AtomicUsize,
    /// Whether the first completion is lost while another owner takes the key over and
    /// completes it with this record.
    overtaken_by: Option<Completed>,
    /// How many renewals still fail with a backend error, without being applied.
    failing_renewals: AtomicUsize,
    /// Fails every renewal, unapplied, while set: an outage the check ends.
    renewals_down: AtomicBool,
    /// Gets a permit each time a renewal reaches the store under test and is applied.
    pub(crate) renewed: Semaphore,
    /// How many step writes still fail with a backend error, without being applied.
    failing_steps: AtomicUsize,
    /// How many completions were asked for.
    pub(crate) completions: AtomicUsize,
    /// How many reads fail once a completion's answer is lost: the store is still down.
    reads_lost_with_an_answer: usize,
    /// How many reads still fail with a backend error.
    failing_reads: AtomicUsize,
}

/// Which request a [`Hold`] holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// The reserve's answer: the reservation lands, the caller doesn't hear of it yet.
    ReserveAnswer,
    /// The complete request itself: nothing is stored yet.
    Complete,
    /// A renewal, its new lease already computed: nothing is sent yet.
    Renewal,
}

/// Stops one request mid-way until the check lets it go on.
pub(crate) struct Hold {
    what: Held,
    armed: AtomicUsize,
    /// Gets a permit when the request is held.
    pub(crate) reached: Semaphore,
    /// Lets the held request go on.
    pub(crate) proceed: Semaphore,
}

/// Takes one from `count` unless it is zero; whether one was taken.
fn take_one(count: &AtomicUsize) -> bool {
    count
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

impl Hold {
    async fn maybe_hold(&self, what: Held) {
        if self.what != what || !take_one(&self.armed) {
            return;
        }
        self.reached.add_permits(1);
        let _ = self.proceed.acquire().await.map(|permit| permit.forget());
    }
}

impl Probe {
    /// A probe that passes everything through.
    fn over(inner: Arc<dyn Store>) -> Probe {
        Probe {
            inner,
            parked: Arc::new(Semaphore::new(0)),
            unreachable: false,
            lost_completions: AtomicUsize::new(0),
            lost_answer_wait: None,
            hold: None,
            outage: None,
            outage_left: AtomicUsize::new(usize::MAX),
            overtaken_by: None,
            failing_renewals: AtomicUsize::new(0),
            renewals_down: AtomicBool::new(false),
            renewed: Semaphore::new(0),
            failing_steps: AtomicUsize::new(0),
            completions: AtomicUsize::new(0),
            reads_lost_with_an_answer: 0,
            failing_reads: AtomicUsize::new(0),
        }
    }

    /// Reports parked waiters on `parked`.
    pub(crate) fn observing(inner: Arc<dyn Store>, parked: Arc<Semaphore>) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            parked,
            ..Probe::over(inner)
        }))
    }

    /// Refuses every reservation with a backend error.
    pub(crate) fn unreachable(inner: Arc<dyn Store>) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            unreachable: true,
            ..Probe::over(inner)
        }))
    }

    /// Applies the next `count` completions but answers them with a backend error, as when the
    /// connection drops after the write.
    pub(crate) fn losing_completions(inner: Arc<dyn Store>, count: usize) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            lost_completions: AtomicUsize::new(count),
            ..Probe::over(inner)
        }))
    }

    /// Applies the first completion, then moves `clock` on by `wait` and answers it with a
    /// backend error: a write that landed while its answer timed out, past the lease.
    pub(crate) fn losing_a_completion_answer_for(
        inner: Arc<dyn Store>,
        clock: ManualClock,
        wait: Duration,
    ) -> Arc<Intercepted<Probe>> {
        Arc::new(Intercepted(Probe {
            lost_completions: AtomicUsize::new(1),
            lost_answer_wait: Some((clock, wait)),
            ..Probe::over(inner)
        }))
    }

    /// Like [`losing_a_completion_answer_for`](Probe::losing_a_completion_answer_for), and the
    /// next `reads` reads after the lost answer fail too: the store is down a while longer.
    pub(crate) fn losing_a_completion_answer_and_reads(
        inner: Arc<dyn Store>,
        clock: ManualClock,
        wait: Duration,
        reads: usize,
    ) -> Arc<Intercepted<Probe>> {
        Arc::new(Intercepted(Probe {
            lost_completions: AtomicUsize::new(1),
            lost_answer_wait: Some((clock, wait)),
            reads_lost_with_an_answer: reads,
            ..Probe::over(inner)
        }))
    }

    /// How many reads are still to fail.
    pub(crate) fn reads_left_to_fail(&self) -> usize {
        self.failing_reads.load(Ordering::SeqCst)
    }

    /// Holds the first request of kind `what`; returns the store and the hold to steer it.
    pub(crate) fn holding(
        inner: Arc<dyn Store>,
        what: Held,
    ) -> (Arc<dyn Store>, Arc<Intercepted<Probe>>) {
        let probe = Arc::new(Intercepted(Probe {
            hold: Some(Hold {
                what,
                armed: AtomicUsize::new(1),
                reached: Semaphore::new(0),
                proceed: Semaphore::new(0),
            }),
            ..Probe::over(inner)
        }));
        (probe.clone(), probe)
    }

    /// Fails every completion with a backend error, without applying it, and moves `clock` on
    /// by `each` per failure: a store outage during which time passes.
    pub(crate) fn failing_completions(
        inner: Arc<dyn Store>,
        clock: ManualClock,
        each: Duration,
    ) -> Arc<Intercepted<Probe>> {
        Arc::new(Intercepted(Probe {
            outage: Some((clock, each)),
            ..Probe::over(inner)
        }))
    }

    /// Fails the next `count` completions as [`failing_completions`](Probe::failing_completions)
    /// does, then lets them through: an outage that ends.
    pub(crate) fn failing_completions_for(
        inner: Arc<dyn Store>,
        clock: ManualClock,
        each: Duration,
        count: usize,
    ) -> Arc<Intercepted<Probe>> {
        Arc::new(Intercepted(Probe {
            outage: Some((clock, each)),
            outage_left: AtomicUsize::new(count),
            ..Probe::over(inner)
        }))
    }

    /// Loses the first completion with a backend error, unapplied, while another owner takes
    /// the key over and completes it with `theirs`.
    pub(crate) fn overtaken(inner: Arc<dyn Store>, theirs: Completed) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            overtaken_by: Some(theirs),
            ..Probe::over(inner)
        }))
    }

    /// Fails the next `count` step writes with a backend error, unapplied.
    pub(crate) fn failing_steps(inner: Arc<dyn Store>, count: usize) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            failing_steps: AtomicUsize::new(count),
            ..Probe::over(inner)
        }))
    }

    /// Fails the next `count` renewals with a backend error, unapplied.
    pub(crate) fn failing_renewals(inner: Arc<dyn Store>, count: usize) -> Arc<dyn Store> {
        Arc::new(Intercepted(Probe {
            failing_renewals: AtomicUsize::new(count),
            ..Probe::over(inner)
        }))
    }

    /// Fails every renewal with a backend error, unapplied, until
    /// [`end_renewal_outage`](Probe::end_renewal_outage).
    pub(crate) fn renewal_outage(inner: Arc<dyn Store>) -> Arc<Intercepted<Probe>> {
        Arc::new(Intercepted(Probe {
            renewals_down: AtomicBool::new(true),
            ..Probe::over(inner)
        }))
    }

    /// Lets renewals through again.
    pub(crate) fn end_renewal_outage(&self) {
        self.renewals_down.store(false, Ordering::SeqCst);
    }

    /// Writes `theirs` as another owner would after taking `key` over.
    async fn overtake(&self, key: &Key, theirs: &Completed) -> Result<(), StoreError> {
        let other = OwnerToken::generate();
        self.inner.delete(key).await?;
        let record = idem_core::store::InProgress::new(
            other.clone(),
            *theirs.fingerprint(),
            theirs.expires_at(),
        )
        .with_attempt(2);
        let claim = Claim::new(record, idem_core::store::Timestamp::EPOCH);
        self.inner.reserve(key, &claim).await?;
        self.inner.complete(key, &other, theirs).await
    }

    /// The hold set up by [`Probe::holding`].
    pub(crate) fn hold(&self) -> &Hold {
        self.hold.as_ref().expect("a holding probe")
    }

    async fn maybe_hold(&self, what: Held) {
        if let Some(hold) = &self.hold {
            hold.maybe_hold(what).await;
        }
    }
}

#[async_trait]
impl Interceptor for Probe {
    fn inner(&self) -> &dyn Store {
        &*self.inner
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        if self.unreachable {
            return Err(StoreError::backend("connection refused"));
        }
        let reservation = self.inner.reserve(key, claim).await?;
        self.maybe_hold(Held::ReserveAnswer).await;
        Ok(reservation)
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let attempt = self.completions.fetch_add(1, Ordering::SeqCst);
        self.maybe_hold(Held::Complete).await;
        if let (Some(theirs), 0) = (&self.overtaken_by, attempt) {
            self.overtake(key, theirs).await?;
            return Err(StoreError::backend("connection reset"));
        }
        let down = take_one(&self.outage_left);
        if let (Some((clock, each)), true) = (&self.outage, down) {
            clock.advance(*each);
            return Err(StoreError::backend("connection refused"));
        }
        self.inner.complete(key, owner, record).await?;
        let lose = take_one(&self.lost_completions);
        if lose {
            self.failing_reads
                .store(self.reads_lost_with_an_answer, Ordering::SeqCst);
            if let Some((clock, wait)) = &self.lost_answer_wait {
                clock.advance(*wait);
                return Err(StoreError::backend("timed out"));
            }
            return Err(StoreError::backend("connection reset"));
        }
        Ok(())
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: idem_core::store::Timestamp,
    ) -> Result<(), StoreError> {
        let fail = take_one(&self.failing_steps);
        if fail {
            return Err(StoreError::backend("connection reset"));
        }
        self.inner
            .record_step(key, owner, name, value, kept_until)
            .await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: idem_core::store::Timestamp,
    ) -> Result<(), StoreError> {
        let fail = take_one(&self.failing_renewals);
        if fail || self.renewals_down.load(Ordering::SeqCst) {
            return Err(StoreError::backend("connection refused"));
        }
        self.maybe_hold(Held::Renewal).await;
        self.inner.renew(key, owner, lease_until).await?;
        self.renewed.add_permits(1);
        Ok(())
    }

    async fn get(&self, key: &Key) -> Result<Option<idem_core::store::Record>, StoreError> {
        if take_one(&self.failing_reads) {
            return Err(StoreError::backend("connection refused"));
        }
        self.inner.get(key).await
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.parked.add_permits(1);
        self.inner.changed(key, timeout).await
    }
}
