//! `MemoryStore`: the `Store` implementation over the shards.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idem_core::{
    store::{Claim, Completed, Lookup, OwnerToken, Probe, Record, Reservation, Store, Timestamp},
    Key, StoreError,
};

use super::builder::MemoryStoreBuilder;
use super::capacity::Capacity;
use super::shard::{Shard, Slot};
use super::StoreFull;

/// An in-process [`Store`]: a sharded map with per-key waiters. Clones share the records.
///
/// Memory stays bounded: at most once per sweep interval (default 1 s), the reservation that
/// notices the interval has passed has a blocking task remove every completed record past its
/// expiry and every in-progress record whose lease passed more than a minute ago, so the map
/// holds the live records plus those that expired since the last sweep. A hard bound on the
/// number of records is set with [`MemoryStoreBuilder::max_records`].
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    shards: Box<[Shard]>,
    hasher: RandomState,
    room: Capacity,
    sweep_interval: Option<Duration>,
    next_sweep: AtomicU64,
    /// Held while a sweep runs in the background.
    sweeping: Arc<tokio::sync::Mutex<()>>,
}

impl MemoryStore {
    /// A store with the default settings: see [`MemoryStoreBuilder`].
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts building a store with other settings.
    pub fn builder() -> MemoryStoreBuilder {
        MemoryStoreBuilder::default()
    }

    pub(crate) fn from_builder(builder: MemoryStoreBuilder) -> Self {
        MemoryStore {
            inner: Arc::new(Inner {
                shards: (0..builder.shards).map(|_| Shard::default()).collect(),
                hasher: RandomState::new(),
                room: Capacity::new(builder.max_records),
                sweep_interval: builder.sweep_interval,
                next_sweep: AtomicU64::new(0),
                sweeping: Arc::default(),
            }),
        }
    }

    /// The number of records held, including expired ones not yet swept.
    pub fn len(&self) -> usize {
        self.inner.shards.iter().map(Shard::len).sum()
    }

    /// Whether the store holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every record that stopped counting before `now` (in-progress records a
    /// [`LEASE_GRACE`](idem_core::store::LEASE_GRACE) after their lease passed); returns how many.
    pub fn purge_expired(&self, now: Timestamp) -> usize {
        let room = &self.inner.room;
        let mut purged = 0;
        room.purge(|| {
            let mut earliest = None::<Timestamp>;
            for shard in self.inner.shards.iter() {
                let (removed, kept) = shard.purge(now, room);
                purged += removed;
                earliest = match (earliest, kept) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            earliest
        });
        purged
    }

    /// Resolves once no sweep runs in the background (at once if none does).
    pub async fn sweeps_finished(&self) {
        drop(self.inner.sweeping.lock().await);
    }

    pub(crate) fn shards(&self) -> &[Shard] {
        &self.inner.shards
    }

    fn shard(&self, key: &Key) -> &Shard {
        let index = self.inner.hasher.hash_one(key) as usize % self.inner.shards.len();
        &self.inner.shards[index]
    }

    /// Starts a sweep when one is due: in a blocking task of the current Tokio runtime, or
    /// here outside one.
    fn sweep_if_due(&self, now: Timestamp) {
        let Some(interval) = self.inner.sweep_interval else {
            return;
        };
        if now.as_millis() < self.inner.next_sweep.load(Ordering::Relaxed) {
            return;
        }
        // While the last sweep still runs, the next one stays due. Only the holder of this
        // lock moves the next sweep, so nothing races the check and the store below.
        let Ok(sweeping) = self.inner.sweeping.clone().try_lock_owned() else {
            return;
        };
        if now.as_millis() < self.inner.next_sweep.load(Ordering::Relaxed) {
            return;
        }
        self.inner
            .next_sweep
            .store((now + interval).as_millis(), Ordering::Relaxed);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let store = self.clone();
                runtime.spawn_blocking(move || {
                    store.purge_expired(now);
                    drop(sweeping);
                });
            }
            Err(_) => {
                self.purge_expired(now);
            }
        }
    }

    fn update_owned(
        &self,
        key: &Key,
        owner: &OwnerToken,
        change: impl FnOnce(&mut HashMap<Key, Slot>),
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
    /// One lock of the key's shard; nothing is swept.
    fn lookup(&self, key: &Key, probe: &Probe) -> Result<Lookup, StoreError> {
        Ok(self.shard(key).lookup(key, probe))
    }

    fn looks_up(&self) -> bool {
        true
    }

    async fn reserve(&self, key: &Key, claim: &Claim) -> Result<Reservation, StoreError> {
        self.sweep_if_due(claim.now());
        let room = &self.inner.room;
        if let Some(reservation) = self.shard(key).reserve(key, claim, room)? {
            return Ok(reservation);
        }
        // Full: expired records make room; live ones are never evicted. While none can have
        // expired yet, the refusal is immediate, not a scan of every record.
        if room.may_free_up(claim.now()) {
            self.purge_expired(claim.now());
        }
        self.shard(key)
            .reserve(key, claim, room)?
            .ok_or_else(|| StoreError::backend(StoreFull { max: room.max() }))
    }

    async fn complete(
        &self,
        key: &Key,
        owner: &OwnerToken,
        record: &Completed,
    ) -> Result<(), StoreError> {
        let room = &self.inner.room;
        self.update_owned(key, owner, |slots| {
            Shard::replace(slots, key, Record::Completed(record.clone()), room)
        })
    }

    async fn release(&self, key: &Key, owner: &OwnerToken) -> Result<(), StoreError> {
        let room = &self.inner.room;
        self.update_owned(key, owner, |slots| Shard::release(slots, key, room))
    }

    async fn record_step(
        &self,
        key: &Key,
        owner: &OwnerToken,
        name: &str,
        value: &[u8],
        kept_until: Timestamp,
    ) -> Result<(), StoreError> {
        self.update_owned(key, owner, |slots| {
            Shard::record_step(slots, key, name, value, kept_until)
        })
    }

    async fn renew(
        &self,
        key: &Key,
        owner: &OwnerToken,
        lease_until: Timestamp,
    ) -> Result<(), StoreError> {
        if self
            .shard(key)
            .renew(key, owner, lease_until, &self.inner.room)
        {
            Ok(())
        } else {
            Err(StoreError::LeaseLost)
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        Ok(self
            .shard(key)
            .lock()
            .get(key)
            .map(|slot| slot.record.clone()))
    }

    async fn delete_if(&self, key: &Key, expected: &Record) -> Result<bool, StoreError> {
        let mut slots = self.shard(key).lock();
        let unchanged = slots
            .get(key)
            .is_some_and(|slot| idem_core::store::is_same_record(&slot.record, expected));
        if unchanged {
            Shard::remove(&mut slots, key, &self.inner.room);
        }
        Ok(unchanged)
    }

    async fn contains(&self, key: &Key) -> Result<bool, StoreError> {
        Ok(self.shard(key).lock().get(key).is_some())
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        Shard::remove(&mut self.shard(key).lock(), key, &self.inner.room);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "memory"
    }

    fn inventory(&self) -> Option<&dyn idem_core::store::Inventory> {
        Some(self)
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
            Some(Record::InProgress(in_progress)) if *in_progress.owner() == owner
        );
        if unchanged {
            let _ = tokio::time::timeout(timeout, notified).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use idem_core::{
        store::{Claim, InProgress, OwnerToken, Reservation},
        Fingerprint,
    };

    use super::*;

    #[test]
    fn the_store_names_itself() {
        assert_eq!(MemoryStore::new().name(), "memory");
    }

    #[tokio::test]
    async fn keys_spread_over_the_shards_and_each_is_found_in_its_own() {
        let store = MemoryStore::builder().shards(4).build();
        let idem = idem_core::Idempotency::new(store.clone());
        let now = Timestamp::from_millis(1_800_000_000_000);
        for order in 0..64 {
            let key = idem.key("orders").part(&order).finish().unwrap();
            let record = InProgress::new(
                OwnerToken::generate(),
                Fingerprint::empty(),
                now + std::time::Duration::from_secs(30),
            );
            let claim = Claim::new(record, now);
            let reserved = store.reserve(&key, &claim).await.unwrap();
            assert!(matches!(reserved, Reservation::Reserved(_)));
            assert!(store.shard(&key).lock().contains_key(&key));
        }
        let held: Vec<usize> = store.shards().iter().map(Shard::len).collect();
        assert_eq!(held.iter().sum::<usize>(), 64);
        assert!(held.iter().all(|&len| len > 0), "{held:?}");
    }

    /// A claim sent again by its owner gets its reservation back, as every store answers it
    /// (the reference store's rule), not its own record as another caller's.
    #[tokio::test]
    async fn a_claim_sent_again_is_its_owners_reservation() {
        let store = MemoryStore::new();
        let idem = idem_core::Idempotency::new(store.clone());
        let key = idem.key("orders").part("o-1").finish().unwrap();
        let now = Timestamp::from_millis(1_800_000_000_000);
        let record = InProgress::new(
            OwnerToken::generate(),
            Fingerprint::empty(),
            now + std::time::Duration::from_secs(30),
        );
        let claim = Claim::new(record.clone(), now);
        for _ in 0..2 {
            let reserved = store.reserve(&key, &claim).await.unwrap();
            assert_eq!(reserved, Reservation::Reserved(record.clone()));
        }
        assert_eq!(store.shard(&key).len(), 1);
    }

    /// `changed` waits for the record to change (here, its release), not a moment less: time
    /// is paused, so only the release or the timeout can end the wait.
    #[tokio::test(start_paused = true)]
    async fn changed_returns_when_the_record_changes_and_not_before() {
        let store = MemoryStore::new();
        let idem = idem_core::Idempotency::new(store.clone());
        let key = idem.key("orders").part("o-1").finish().unwrap();
        let now = Timestamp::from_millis(1_800_000_000_000);
        let owner = OwnerToken::generate();
        let record = InProgress::new(
            owner.clone(),
            Fingerprint::empty(),
            now + std::time::Duration::from_secs(30),
        );
        store.reserve(&key, &Claim::new(record, now)).await.unwrap();

        let second = std::time::Duration::from_secs(1);
        let unchanged = tokio::time::timeout(second, store.changed(&key, 10 * second)).await;
        assert!(unchanged.is_err(), "nothing changed, so it still waits");

        let started = tokio::time::Instant::now();
        let waiting = tokio::spawn({
            let (store, key) = (store.clone(), key.clone());
            async move { store.changed(&key, 10 * second).await }
        });
        tokio::task::yield_now().await;
        store.release(&key, &owner).await.unwrap();
        waiting.await.unwrap().unwrap();
        assert!(started.elapsed() < 10 * second, "woken by the release");
    }
}
