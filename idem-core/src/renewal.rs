//! Renewing a reservation's lease while the body runs.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{Clock, Key, Millis, OwnerToken, Store, StoreError};

/// Renews the lease every third of it from a task of its own, so that a body that holds its
/// worker thread (blocking I/O, heavy computation) on a multi-threaded runtime does not starve
/// the renewal and lose the key to a duplicate. Stops when dropped.
pub(crate) struct Renewal(JoinHandle<()>);

impl Renewal {
    pub(crate) async fn start(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        key: Key,
        owner: OwnerToken,
        lease: Duration,
    ) -> Self {
        let task = tokio::spawn(renew(store, clock, key, owner, lease));
        // A task spawned from a worker waits in that worker's next-task slot, which other
        // workers can't steal from: let it set its timer before the body may hold the thread.
        tokio::task::yield_now().await;
        Renewal(task)
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn renew(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    key: Key,
    owner: OwnerToken,
    lease: Duration,
) {
    let lease_ms: Millis = lease.as_millis().try_into().unwrap_or(Millis::MAX);
    let every = (lease / 3).max(Duration::from_millis(1));
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        interval.tick().await;
        let lease_until = clock.now().saturating_add(lease_ms);
        match store.renew(&key, &owner, lease_until).await {
            Ok(()) => {}
            Err(StoreError::LeaseLost) => {
                tracing::error!(target: "idem", key = key.as_str(), "lease lost while running: another caller took the key over");
                return;
            }
            Err(error) => {
                tracing::warn!(target: "idem", key = key.as_str(), %error, "lease renewal failed; retrying");
            }
        }
    }
}
