//! `MemoryStoreBuilder`: shards, sweeping and the record bound of a memory store.

use std::time::Duration;

use super::store::MemoryStore;

/// How often, at most, expired records are swept out unless told otherwise.
pub(crate) const DEFAULT_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Builds a [`MemoryStore`]: `MemoryStore::builder().max_records(100_000).build()`.
#[derive(Clone, Debug)]
pub struct MemoryStoreBuilder {
    pub(crate) shards: usize,
    pub(crate) sweep_interval: Option<Duration>,
    pub(crate) max_records: usize,
}

impl Default for MemoryStoreBuilder {
    fn default() -> Self {
        let cpus = std::thread::available_parallelism().map_or(4, usize::from);
        MemoryStoreBuilder {
            shards: (cpus * 4).next_power_of_two().max(16),
            sweep_interval: Some(DEFAULT_SWEEP_INTERVAL),
            max_records: usize::MAX,
        }
    }
}

impl MemoryStoreBuilder {
    /// Splits the map into `shards` independently locked parts (at least one). The default is
    /// four per available CPU, at least 16.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = shards.max(1);
        self
    }

    /// Sweeps expired records out at most once per `interval` (default 1 s), from a blocking
    /// task of the runtime so that no reservation waits for it.
    pub fn sweep_interval(mut self, interval: Duration) -> Self {
        self.sweep_interval = Some(interval);
        self
    }

    /// Never sweeps on its own: expired records stay until
    /// [`purge_expired`](MemoryStore::purge_expired) or until a reservation finds the store
    /// full. Expiry is still judged on every read.
    pub fn no_sweeping(mut self) -> Self {
        self.sweep_interval = None;
        self
    }

    /// Holds at most `max` records (default: no bound). When the store is full, a reservation
    /// of a new key first purges expired records, and if that frees nothing it fails closed
    /// with [`StoreFull`](super::StoreFull) (the caller gets `idem_core::Error::Store`, HTTP
    /// 503, and the function does not run). A live record is never evicted: evicting one would
    /// let a duplicate run.
    pub fn max_records(mut self, max: usize) -> Self {
        self.max_records = max;
        self
    }

    /// The store.
    pub fn build(self) -> MemoryStore {
        MemoryStore::from_builder(self)
    }
}
