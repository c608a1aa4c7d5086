//! A store that wraps the store under test to observe it or to inject a fault the real store
//! can't produce on demand. Everything else goes to the real store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;

use crate::error::Message;
use crate::{Claim, Completed, Key, Millis, OwnerToken, Record, Reservation, Store, StoreError};

pub(crate) struct Probe {
    inner: Arc<dyn Store>,
    /// Gets a permit each time a caller starts waiting in `changed`.
    parked: Arc<Semaphore>,
    /// Fail every reservation as an unreachable backend would.
    unreachable: bool,
    /// How many completions still lose their answer: applied, then reported as failed.
    lost_completions: AtomicUsize,
}

impl Probe {
    /// Reports parked waiters on `parked`.
    pub(crate) fn observing(inner: Arc<dyn Store>, parked: Arc<Semaphore>) -> Arc<dyn Store> {
        Arc::new(Probe {
            inner,
            parked,
            unreachable: false,
            lost_completions: AtomicUsize::new(0),
        })
    }

    /// Refuses every reservation with a backend error.
    pub(crate) fn unreachable(inner: Arc<dyn Store>) -> Arc<dyn Store> {
        Arc::new(Probe {
            inner,
            parked: Arc::new(Semaphore::new(0)),
            unreachable: true,
            lost_completions: AtomicUsize::new(0),
        })
    }

    /// Applies the next `count` completions but answers them with a backend error, as when the
    /// connection drops after the write.
    pub(crate) fn losing_completions(inner: Arc<dyn Store>, count: usize) -> Arc<dyn Store> {
        Arc::new(Probe {
            inner,
            parked: Arc::new(Semaphore::new(0)),
            unreachable: false,
            lost_completions: AtomicUsize::new(count),
        })
    }
}

#[async_trait]
impl Store for Probe {
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        if self.unreachable {
            return Err(StoreError::backend(Message("connection refused".into())));
        }
        self.inner.reserve(key, claim).await
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.inner.complete(key, owner, record).await?;
        let lose = self
            .lost_completions
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lose {
            return Err(StoreError::backend(Message("connection reset".into())));
        }
        Ok(())
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.inner.release(key, owner).await
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Millis,
    ) -> Result<(), StoreError> {
        self.inner.renew(key, owner, lease_until).await
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.inner.get(key).await
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        self.inner.delete(key).await
    }

    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        self.parked.add_permits(1);
        self.inner.changed(key, timeout).await
    }
}
