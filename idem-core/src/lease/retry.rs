//! Writing to the store after the body ran (or a step finished), when giving up is costly.

use std::future::Future;
use std::time::Duration;

use crate::lease::{Lease, Loss};
use crate::{
    clock::Clock,
    error::{BoxError, StoreError},
    fingerprint::Fingerprint,
    key::Key,
    store::{OwnerToken, Record, Store},
    TARGET,
};

/// The pause before the second attempt; each later pause is four times longer, up to
/// [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_millis(25);
/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How long a write keeps being retried.
#[derive(Clone, Copy)]
pub(crate) enum Patience {
    /// At most this many attempts: a step write, which the body waits for.
    Attempts(u32),
    /// For as long as the lease holds: a completion, after which nothing waits but the
    /// caller, and which a failover must not cost.
    Lease,
}

/// An owner's fenced write (a completion or a step) that must land if it can: once a side
/// effect happened, giving up leaves the key to a retry that runs it again.
pub(crate) struct FencedWrite<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) key: &'a Key,
    pub(crate) owner: &'a OwnerToken,
    /// The fingerprint of the owner's call.
    pub(crate) fingerprint: &'a Fingerprint,
    pub(crate) lease: &'a Lease,
    /// What is written, for the logs: "the outcome", "step `charge`".
    pub(crate) what: &'a str,
    /// How long it keeps being retried.
    pub(crate) patience: Patience,
}

impl FencedWrite<'_> {
    /// Runs `write`, retrying a backend failure as its [`Patience`] says. With
    /// [`Patience::Lease`], a store failover shorter than the lease (a Redis Cluster promotes a
    /// replica after its 15 s node timeout) costs a delay, not the outcome. No retry starts
    /// whose pause would reach the end of the lease as it stood when the write began (by then
    /// another caller may have taken the key over); the last attempt may still end after it,
    /// by at most the store's own request timeout, and is fenced like every other.
    ///
    /// A write refused as not owned may still be in place: an earlier attempt landed with only
    /// its answer lost, or the caller completed the record in its own transaction. The record
    /// is read back, and `landed` says whether it shows the write. When it does not, the
    /// refusal is real, and the [`Lease`] learns what the record says of it
    /// ([`Lease::learn`]), which wakes the body's
    /// [`lease_lost`](crate::CallContext::lease_lost) when another owner holds the key. A
    /// write given up after failures is read back too, for up to one more lease while the
    /// store cannot be read, and reported lost only when the record does not show it.
    pub(crate) async fn run<Fut>(
        self,
        mut write: impl FnMut() -> Fut,
        landed: impl Fn(&Record) -> bool,
    ) -> Result<(), StoreError>
    where
        Fut: Future<Output = Result<(), StoreError>>,
    {
        let (key, what) = (self.key.as_str(), self.what);
        if self.lease.loss() == Some(Loss::TakenOver) {
            return Err(StoreError::LeaseLost);
        }
        // Renewals go on while the write is retried: the lease as it stands now bounds the
        // retries, however long later renewals would stretch it. The same span is measured on
        // the monotonic clock too, so that a clock that stands still or steps back cannot
        // keep the retries going.
        let deadline = self.lease.until();
        let span = deadline.saturating_duration_since(self.clock.now());
        let started = tokio::time::Instant::now();
        let mut backoff = BACKOFF;
        for attempt in 1.. {
            let error = match write().await {
                Ok(()) => return Ok(()),
                Err(StoreError::Backend(error)) => error,
                Err(StoreError::LeaseLost) => return self.refused(landed, span).await,
                Err(error) => return Err(error),
            };
            if self.lease.loss() == Some(Loss::TakenOver) {
                return Err(StoreError::LeaseLost);
            }
            if let Patience::Attempts(most) = self.patience {
                if attempt >= most {
                    return self.gave_up(error, attempt, "", span, landed).await;
                }
            }
            let lease_ends = self.clock.now() + backoff >= deadline.min(self.lease.until());
            if lease_ends || started.elapsed() + backoff >= span {
                let why = " and the lease passes before a retry";
                return self.gave_up(error, attempt, why, span, landed).await;
            }
            tracing::warn!(target: TARGET, key, %error, attempt, "storing {what} failed; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 4).min(MAX_BACKOFF);
        }
        unreachable!("the loop returns")
    }

    /// Gives up on a write whose last attempt failed, after reading the record back: a failure
    /// may be an answer lost after the write landed (a timeout, a connection reset), and a
    /// write in place is not to be reported as lost. A store that cannot be read is asked
    /// again, with backoff, for up to `span` (the lease as it stood when the write began):
    /// the caller waits anyway, and a completed record can no longer be taken over.
    async fn gave_up(
        &self,
        error: BoxError,
        attempt: u32,
        why: &str,
        span: Duration,
        landed: impl Fn(&Record) -> bool,
    ) -> Result<(), StoreError> {
        let (key, what) = (self.key.as_str(), self.what);
        match self.read_back(span).await {
            Ok(Some(record)) if landed(&record) => {
                tracing::warn!(target: TARGET, key, %error, attempt, "storing {what} failed{why}, but the record read back holds it");
                return Ok(());
            }
            Ok(_) => {}
            Err(read) => {
                tracing::error!(target: TARGET, key, %read, "the record could not be read back");
            }
        }
        tracing::error!(target: TARGET, key, %error, attempt, "storing {what} failed{why}");
        Err(StoreError::Backend(error))
    }

    /// Reads the record back, asking again with backoff while the store cannot be read, for
    /// up to `span`; the last read's error when it never answered.
    async fn read_back(&self, span: Duration) -> Result<Option<Record>, StoreError> {
        let (key, what) = (self.key.as_str(), self.what);
        let started = tokio::time::Instant::now();
        let mut backoff = BACKOFF;
        loop {
            match self.store.get(self.key).await {
                Ok(record) => return Ok(record),
                Err(read) if started.elapsed() + backoff < span => {
                    tracing::warn!(target: TARGET, key, %read, "reading back the record after storing {what} failed; reading again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 4).min(MAX_BACKOFF);
                }
                Err(read) => return Err(read),
            }
        }
    }

    /// Reads the record back after the store refused the write, for up to `span` while the
    /// store cannot be read; see [`run`](FencedWrite::run).
    async fn refused(
        &self,
        landed: impl Fn(&Record) -> bool,
        span: Duration,
    ) -> Result<(), StoreError> {
        let (key, what) = (self.key.as_str(), self.what);
        let record = match self.read_back(span).await {
            Ok(record) => record,
            Err(error) => {
                // Unknown, not lost: the record may hold this call's own completion.
                tracing::error!(target: TARGET, key, %error, "storing {what} was refused and the record could not be read back");
                if self.clock.now() >= self.lease.until() {
                    self.lease.lose(Loss::Expired);
                }
                return Err(StoreError::LeaseLost);
            }
        };
        if record.as_ref().is_some_and(landed) {
            tracing::debug!(target: TARGET, key, "storing {what} was refused, but the record already holds it");
            return Ok(());
        }
        if self
            .lease
            .learn(record.as_ref(), self.owner, self.fingerprint)
            .is_some()
        {
            tracing::error!(target: TARGET, key, "storing {what} was refused: the lease is lost");
        }
        Err(StoreError::LeaseLost)
    }
}
