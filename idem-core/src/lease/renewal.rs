//! Renewing a reservation's lease until its outcome is stored or released.

use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use tokio::task::JoinHandle;

use crate::lease::{Lease, Loss};
use crate::{
    clock::Clock,
    error::StoreError,
    fingerprint::Fingerprint,
    key::Key,
    store::{OwnerToken, Store, Timestamp},
    TARGET,
};

/// The first pause before a failed renewal is tried again; it doubles up to [`MAX_BACKOFF`]
/// or the interval, whichever is shorter.
const RETRY_BACKOFF: Duration = Duration::from_millis(10);
/// The longest pause between two tries of a failing renewal: once a store comes back, the
/// lease is renewed within this.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What a renewal needs to know.
pub(crate) struct Renew {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) key: Key,
    pub(crate) owner: OwnerToken,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) lease: Duration,
    pub(crate) every: Duration,
    pub(crate) state: Arc<Lease>,
}

/// Renews the lease every `every` from a task of its own, so that a body that holds its thread
/// (blocking I/O, heavy computation) on a multi-threaded runtime does not starve the renewal
/// and lose the key to a duplicate. Stops when dropped.
///
/// The body should still block inside `tokio::task::block_in_place` or `spawn_blocking`: a
/// worker blocked outright may be the one that was driving the runtime's timers and I/O, and
/// then every timer waits for it, the renewal's included, until the body lets go.
///
/// A renewal that fails is tried again, also after the lease passed: renewing late is safe,
/// since the store refuses it once another caller took the key over, and until then no one
/// holds the key but this call. When the lease passes with no renewal through, the loss is
/// recorded in the [`Lease`] (which wakes the body's
/// [`lease_lost`](crate::CallContext::lease_lost)); a renewal that gets through afterwards
/// ends it. When the store refuses a renewal, the record is read back before anything is
/// concluded ([`Lease::learn`]): a record this call completed in the caller's own
/// transaction ends renewal quietly and settles the lease (no one can take the key over, so
/// its deadline passing is no loss), another owner's is a takeover, and renewal stops.
pub(crate) struct Renewal(Option<JoinHandle<()>>);

impl Renewal {
    /// Spawns the renewal task and lets it set its timer.
    pub(crate) async fn start(renew: Renew) -> Self {
        // The guard exists before the first await, so a call dropped there stops the task.
        let renewal = Renewal(Some(tokio::spawn(renew.run().in_current_span())));
        // A task spawned from a worker waits in that worker's next-task slot, which other
        // workers can't steal from: let it set its timer before the body may hold the thread.
        tokio::task::yield_now().await;
        renewal
    }

    /// No renewal: the lease holds as it was set ([`Call::without_renewal`](crate::Call::without_renewal)).
    pub(crate) fn none() -> Self {
        Renewal(None)
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

impl Renew {
    async fn run(self) {
        let mut interval =
            tokio::time::interval_at(tokio::time::Instant::now() + self.every, self.every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if let Renewed::Stop = self.renew().await {
                return;
            }
        }
    }

    /// Renews once, trying again until the store answers.
    async fn renew(&self) -> Renewed {
        let key = self.key.as_str();
        let mut backoff = RETRY_BACKOFF;
        let mut tries = 0u32;
        loop {
            let until = self.clock.now() + self.lease;
            let failure = match self.renew_by_deadline(until).await {
                Ok(()) => {
                    if self.state.renewed(until) {
                        tracing::warn!(target: TARGET, key, "lease renewed again after an outage; no one took the key over meanwhile");
                    } else if tries > 0 {
                        tracing::info!(target: TARGET, key, tries, "lease renewed after failed tries");
                    }
                    return Renewed::Continue;
                }
                Err(StoreError::LeaseLost) => match self.store.get(&self.key).await {
                    Ok(record) => return self.refused(record.as_ref()),
                    Err(error) => crate::error::BoxError::from(error),
                },
                Err(StoreError::Backend(error)) | Err(StoreError::Rejected(error)) => error,
                Err(error) => crate::error::BoxError::from(error),
            };
            tries += 1;
            if self.clock.now() >= self.state.until() && self.state.loss().is_none() {
                tracing::error!(target: TARGET, key, error = %failure, "lease passed before a renewal reached the store; another caller may take the key over; renewal goes on");
                self.state.lose(Loss::Expired);
            } else if tries == 1 {
                tracing::warn!(target: TARGET, key, error = %failure, "lease renewal failed; retrying until one gets through");
            } else {
                tracing::debug!(target: TARGET, key, error = %failure, tries, "lease renewal failed again");
            }
            tokio::time::sleep(jittered(backoff, &self.owner, tries)).await;
            backoff = (backoff * 2).min(self.every).min(MAX_BACKOFF);
        }
    }

    /// One renewal to `until`. A renewal still in flight when the lease passes (a store that
    /// hangs, a pool with no free connection, a row lock held by a slow commit) does not hold
    /// back the news: the loss is recorded at the deadline, and the renewal goes on, ending
    /// the loss if it gets through.
    async fn renew_by_deadline(&self, until: Timestamp) -> Result<(), StoreError> {
        let mut renewing = std::pin::pin!(self.store.renew(&self.key, &self.owner, until));
        loop {
            let remaining = self
                .state
                .until()
                .saturating_duration_since(self.clock.now());
            if remaining.is_zero() {
                break;
            }
            if let Ok(result) = tokio::time::timeout(remaining, renewing.as_mut()).await {
                return result;
            }
        }
        if self.state.loss().is_none() {
            tracing::error!(target: TARGET, key = self.key.as_str(), "lease passed while a renewal was on its way to the store; another caller may take the key over; renewal goes on");
            self.state.lose(Loss::Expired);
        }
        renewing.await
    }

    /// Ends renewal after the store refused it, with what the record read back says.
    fn refused(&self, record: Option<&crate::store::Record>) -> Renewed {
        let key = self.key.as_str();
        match self.state.learn(record, &self.owner, &self.fingerprint) {
            None => {
                tracing::debug!(target: TARGET, key, "renewal ends: the record is this call's, completed or released")
            }
            Some(_) => {
                tracing::error!(target: TARGET, key, "lease lost while running: another caller took the key over, or may have once the lease passed");
            }
        }
        Renewed::Stop
    }
}

/// `pause` made 75% to 125% of itself, varying with the owner and the try, so that the calls
/// an outage stopped don't all try again in the same instant once the store is back.
fn jittered(pause: Duration, owner: &OwnerToken, tries: u32) -> Duration {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (owner.as_str(), tries).hash(&mut hasher);
    let per_mille = 750 + hasher.finish() % 501;
    pause * u32::try_from(per_mille).unwrap_or(1000) / 1000
}

/// Whether renewing goes on.
enum Renewed {
    Continue,
    Stop,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jittered_pause_stays_within_a_quarter_and_varies_with_the_owner_and_the_try() {
        let pause = Duration::from_millis(1_000);
        let mut seen = std::collections::HashSet::new();
        for owner in 0..20 {
            let owner = OwnerToken::from(format!("owner-{owner}"));
            for tries in 1..5 {
                let jittered = jittered(pause, &owner, tries);
                assert!(
                    (pause * 3 / 4..=pause * 5 / 4).contains(&jittered),
                    "{jittered:?}"
                );
                seen.insert(jittered);
            }
        }
        assert!(seen.len() > 40, "80 pauses, {} distinct", seen.len());
    }
}
