//! Writing to the store after the body ran (or a step finished), when giving up is costly.

use std::future::Future;
use std::time::Duration;

use crate::lease::{Lease, Loss};
use crate::{Clock, Key, Record, Store, StoreError, TARGET};

/// How often a write is tried before it fails.
const ATTEMPTS: u32 = 3;
/// The pause before the second attempt; each later pause is four times longer.
const BACKOFF: Duration = Duration::from_millis(25);

/// An owner's fenced write (a completion or a step) that must land if it can: once a side
/// effect happened, giving up leaves the key to a retry that runs it again.
pub(crate) struct FencedWrite<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) key: &'a Key,
    pub(crate) lease: &'a Lease,
    /// What is written, for the logs: "the outcome", "step `charge`".
    pub(crate) what: &'a str,
}

impl FencedWrite<'_> {
    /// Runs `write`, retrying a backend failure while the lease holds. A retry that would
    /// outlast the lease is not made: by then another caller may have taken the key over. When
    /// a retry is refused as not owned, an earlier attempt may have landed with only its answer
    /// lost: the record is read back, and `landed` says whether it shows the write.
    pub(crate) async fn run<Fut>(
        self,
        mut write: impl FnMut() -> Fut,
        landed: impl FnOnce(&Record) -> bool,
    ) -> Result<(), StoreError>
    where
        Fut: Future<Output = Result<(), StoreError>>,
    {
        let (key, what) = (self.key.as_str(), self.what);
        if self.lease.loss() == Some(Loss::TakenOver) {
            return Err(StoreError::LeaseLost);
        }
        let mut backoff = BACKOFF;
        for attempt in 1..=ATTEMPTS {
            match write().await {
                Ok(()) => return Ok(()),
                Err(StoreError::Backend(error)) if attempt < ATTEMPTS => {
                    if self.lease.loss() == Some(Loss::TakenOver) {
                        return Err(StoreError::LeaseLost);
                    }
                    if self.clock.now() + backoff >= self.lease.until() {
                        tracing::error!(target: TARGET, key, %error, "storing {what} failed and the lease passes before a retry");
                        return Err(StoreError::Backend(error));
                    }
                    tracing::warn!(target: TARGET, key, %error, attempt, "storing {what} failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff *= 4;
                }
                Err(StoreError::LeaseLost) if attempt > 1 => {
                    return match self.store.get(self.key).await {
                        Ok(Some(record)) if landed(&record) => Ok(()),
                        _ => Err(StoreError::LeaseLost),
                    };
                }
                Err(error) => return Err(error),
            }
        }
        unreachable!("the last attempt returns")
    }
}
