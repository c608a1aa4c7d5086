//! `MemoryStore`: the `Store` implementation over the shards.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_core::{
    Claim, Completed, Key, Millis, OwnerToken, Record, Reservation, Store, StoreError,
};

use super::shard::Shard;

/// How often, at most, expired records are swept out unless told otherwise.
const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// An in-process [`Store`]: a sharded map with per-key waiters. Clones share the records.
///
/// Memory stays bounded: at most once per sweep interval (default 1 s), the reservation that
/// notices the interval has passed removes every completed record past its expiry and every
/// in-progress record whose lease passed more than a minute ago, so the map holds the live
/// records plus those that expired since the last sweep.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    shards: Box<[Shard]>,
    hasher: RandomState,
    sweep_interval: Millis,
    next_sweep: AtomicU64,
}

impl MemoryStore {
    /// A store with one shard per 4 available CPUs' worth of contention (at least 16).
    pub fn new() -> Self {
        let cpus = std::thread::available_parallelism().map_or(4, usize::from);
        Self::with_shards((cpus * 4).next_power_of_two().max(16))
    }

    /// A store with `shards` shards (at least one).
    pub fn with_shards(shards: usize) -> Self {
        MemoryStore {
            inner: Arc::new(Inner {
                shards: (0..shards.max(1)).map(|_| Shard::default()).collect(),
                hasher: RandomState::new(),
                sweep_interval: DEFAULT_SWEEP_INTERVAL.as_millis() as Millis,
                next_sweep: AtomicU64::new(0),
            }),
        }
    }

    /// Sweeps expired records at most once per `interval`. Set it before sharing the store.
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        let inner =
            Arc::get_mut(&mut self.inner).expect("set the sweep interval before cloning the store");
        inner.sweep_interval = interval.as_millis().try_into().unwrap_or(Millis::MAX);
        self
    }

    /// The number of records held, including expired ones not yet swept.
    pub fn len(&self) -> usize {
        self.inner.shards.iter().map(Shard::len).sum()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every record that stopped counting before `now` (milliseconds since the Unix
    /// epoch; in-progress records a minute after their lease passed); returns how many.
    pub fn purge_expired(&self, now: Millis) -> usize {
        self.inner.shards.iter().map(|shard| shard.purge(now)).sum()
    }

    fn shard(&self, key: &Key) -> &Shard {
        let index = self.inner.hasher.hash_one(key) as usize % self.inner.shards.len();
        &self.inner.shards[index]
    }

    fn sweep_if_due(&self, now: Millis) {
        let due = self.inner.next_sweep.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let next = now.saturating_add(self.inner.sweep_interval);
        if self
            .inner
            .next_sweep
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.purge_expired(now);
        }
    }

    fn update_owned(
        &self,
        key: &Key,
        owner: &OwnerToken,
        change: impl FnOnce(&mut std::collections::HashMap<Key, super::shard::Slot>),
    ) -> Result<(), StoreError> {
        if self.shard(key).update_owned(key, owner, change) {
            Ok(())
        } else {
            Err(StoreError::LeaseLost)
        }
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("shards", &self.inner.shards.len())
            .field("records", &self.len())
            .finish()
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.sweep_if_due(claim.now);
        Ok(self.shard(key).reserve(key, claim))
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        self.update_owned(key, owner, |slots| {
            Shard::replace(slots, key, Record::Completed(record.clone()))
        })
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        self.update_owned(key, owner, |slots| Shard::remove(slots, key))
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Millis,
    ) -> Result<(), StoreError> {
        self.update_owned(key, owner, |slots| Shard::renew(slots, key, lease_until))
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        Ok(self
            .shard(key)
            .lock()
            .get(key)
            .map(|slot| slot.record.clone()))
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        Shard::remove(&mut self.shard(key).lock(), key);
        Ok(())
    }

    /// Waits for the in-progress record under `key` to be completed, released, taken over or
    /// removed: woken by that change, not by polling.
    async fn changed(&self, key: &Key, timeout: Duration) -> Result<(), StoreError> {
        let shard = self.shard(key);
        let watched = shard
            .lock()
            .get_mut(key)
            .and_then(|s| s.in_progress_waiters());
        let Some((owner, waiters)) = watched else {
            return Ok(());
        };
        let notified = waiters.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        // The record may have changed between the first look and `enable`.
        let unchanged = matches!(
            shard.lock().get(key).map(|slot| &slot.record),
            Some(Record::InProgress(in_progress)) if in_progress.owner == owner
        );
        if unchanged {
            let _ = tokio::time::timeout(timeout, notified).await;
        }
        Ok(())
    }
}
