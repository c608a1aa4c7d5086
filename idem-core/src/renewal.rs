//! Renewing a reservation's lease until its outcome is stored or released.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::lease::{Lease, Loss};
use crate::{Clock, Key, OwnerToken, Store, StoreError};

/// The first pause before a failed renewal is tried again; it doubles up to the interval.
const RETRY_BACKOFF: Duration = Duration::from_millis(10);

/// What a renewal needs to know.
pub(crate) struct Renew {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) key: Key,
    pub(crate) owner: OwnerToken,
    pub(crate) lease: Duration,
    pub(crate) every: Duration,
    pub(crate) state: Arc<Lease>,
}

/// Renews the lease every `every` from a task of its own, so that a body that holds its worker
/// thread (blocking I/O, heavy computation) on a multi-threaded runtime does not starve the
/// renewal and lose the key to a duplicate. Stops when dropped.
///
/// A renewal that fails is tried again until the lease passes; if none reached the store by
/// then, or the store says another owner holds the key, the loss is recorded in the [`Lease`]
/// (which wakes the body's [`lease_lost`](crate::CallContext::lease_lost)) and renewal stops.
pub(crate) struct Renewal(JoinHandle<()>);

impl Renewal {
    /// Spawns the renewal task and lets it set its timer.
    pub(crate) async fn start(renew: Renew) -> Self {
        // The guard exists before the first await, so a call dropped there stops the task.
        let renewal = Renewal(tokio::spawn(renew.run()));
        // A task spawned from a worker waits in that worker's next-task slot, which other
        // workers can't steal from: let it set its timer before the body may hold the thread.
        tokio::task::yield_now().await;
        renewal
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Renew {
    async fn run(self) {
        let mut interval =
            tokio::time::interval_at(tokio::time::Instant::now() + self.every, self.every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            let mut backoff = RETRY_BACKOFF;
            loop {
                // Renewing after the deadline is still safe: the store refuses it if another
                // caller took over, and otherwise no one holds the key but this call.
                let now = self.clock.now();
                let until = now + self.lease;
                match self.store.renew(&self.key, &self.owner, until).await {
                    Ok(()) => {
                        self.state.renewed(until);
                        break;
                    }
                    Err(StoreError::LeaseLost) => {
                        tracing::error!(target: crate::TARGET, key = self.key.as_str(), "lease lost while running: another caller took the key over");
                        self.state.lose(Loss::TakenOver);
                        return;
                    }
                    Err(error) if self.clock.now() >= self.state.until() => {
                        tracing::error!(target: crate::TARGET, key = self.key.as_str(), %error, "lease passed before a renewal reached the store; another caller may take the key over");
                        self.state.lose(Loss::Expired);
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(target: crate::TARGET, key = self.key.as_str(), %error, "lease renewal failed; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(self.every);
                    }
                }
            }
        }
    }
}
