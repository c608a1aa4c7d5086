//! A bounded in-process cache of completed records, in front of any store.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::{
    key::Key,
    store::{Completed, Timestamp},
};

/// How long a cached record is replayed at most unless
/// [`ReplayCache::with_max_age`] says otherwise: one minute.
pub const DEFAULT_REPLAY_CACHE_MAX_AGE: Duration = Duration::from_secs(60);

/// What an entry costs beyond its key and stored value: the entry itself and the bookkeeping
/// of the maps that hold it, roughly.
const ENTRY_OVERHEAD: usize = 128;

/// A bounded cache of completed records kept by one [`Idempotency`](crate::Idempotency) handle
/// (and its clones), so that replaying a hot key makes no store round trip.
///
/// A completed record does not change until it expires, so a cached replay returns exactly what
/// the store would; the fingerprint is still compared, so a call with other arguments still gets
/// [`Error::Mismatch`](crate::Error::Mismatch). An entry is dropped when the record expires
/// (by the handle's clock), when it is older than [`max_age`](ReplayCache::max_age), or when
/// the cache is over its entry or byte budget (least recently used first).
///
/// In front of a store that finds records in the process (the memory store), a record is
/// cached only while there is room: evicting another to make room costs more than the store's
/// own lookup, which a miss falls back to.
///
/// The one change a completed record can see is [`Idempotency::forget`](crate::Idempotency::forget).
/// Through the handle that holds the cache, it evicts the entry at once; a `forget` by another
/// process or handle is seen here only once the entry is `max_age` old, so `max_age` bounds how
/// long this process may keep replaying a forgotten record.
///
/// ```
/// use std::time::Duration;
/// use idem_core::ReplayCache;
/// let cache = ReplayCache::new(10_000, 16 * 1024 * 1024).with_max_age(Duration::from_secs(30));
/// assert_eq!(cache.max_entries(), 10_000);
/// // idem_core::Idempotency::new(store).with_replay_cache(cache)
/// ```
pub struct ReplayCache {
    max_entries: usize,
    max_bytes: usize,
    max_age: Duration,
    entries: Mutex<Entries>,
}

impl ReplayCache {
    /// A cache of at most `max_entries` records taking at most `max_bytes` (keys, stored values
    /// and a fixed overhead per entry), each kept at most [`DEFAULT_REPLAY_CACHE_MAX_AGE`].
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        ReplayCache {
            max_entries,
            max_bytes,
            max_age: DEFAULT_REPLAY_CACHE_MAX_AGE,
            entries: Mutex::default(),
        }
    }

    /// Keeps each entry at most `max_age` after it was cached, even when its record lives
    /// longer: the bound on how stale a `forget` made elsewhere can be.
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The most entries the cache holds.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The most bytes the cache holds.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// How long an entry is kept at most.
    pub fn max_age(&self) -> Duration {
        self.max_age
    }

    /// How many entries the cache holds now.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the cache's entries take now, as counted against
    /// [`max_bytes`](ReplayCache::max_bytes).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The record cached under `key`, unless it expired or outlived the cap at `now`.
    pub(crate) fn get(&self, key: &Key, now: Timestamp) -> Option<Arc<Completed>> {
        let mut guard = self.lock();
        let entries = &mut *guard;
        let last_use = entries.next_use();
        let entry = entries.by_key.get_mut(key)?;
        if now >= entry.valid_until {
            entries.remove(key);
            return None;
        }
        // Its place in the order of use moves when eviction comes to it, not on every hit.
        entry.last_use = last_use;
        Some(entry.completed.clone())
    }

    /// Caches `completed` under `key`, read or written at `now`: evicting the least recently
    /// used entries to make room when `evict`, else only if there is room.
    pub(crate) fn insert(&self, key: &Key, completed: Arc<Completed>, now: Timestamp, evict: bool) {
        let valid_until = completed.expires_at().min(now + self.max_age);
        let bytes = key.as_str().len() + completed.outcome().body().len() + ENTRY_OVERHEAD;
        if now >= valid_until || bytes > self.max_bytes || self.max_entries == 0 {
            return;
        }
        let mut entries = self.lock();
        let full =
            entries.by_key.len() >= self.max_entries || entries.bytes + bytes > self.max_bytes;
        if full && !evict && !entries.by_key.contains_key(key) {
            return;
        }
        entries.remove(key);
        entries.push(key.clone(), completed, valid_until, bytes);
        // At most one removal per entry: whatever happens to the bookkeeping, eviction ends.
        let mut removable = entries.by_key.len();
        while removable > 0
            && (entries.by_key.len() > self.max_entries || entries.bytes > self.max_bytes)
        {
            entries.remove_least_recent();
            removable -= 1;
        }
    }

    /// Drops the entry under `key`.
    pub(crate) fn remove(&self, key: &Key) {
        self.lock().remove(key);
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        // The maps are consistent between statements, so a panic elsewhere cannot leave them
        // half changed.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl fmt::Debug for ReplayCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayCache")
            .field("max_entries", &self.max_entries)
            .field("max_bytes", &self.max_bytes)
            .field("max_age", &self.max_age)
            .field("len", &self.len())
            .finish()
    }
}

/// The entries, and their order of last use.
#[derive(Default)]
struct Entries {
    by_key: HashMap<Key, Entry>,
    /// Use sequence number to key, least recently used first: each entry under the use it
    /// was queued at, which may be older than its last.
    by_use: BTreeMap<u64, Key>,
    next_use: u64,
    bytes: usize,
}

struct Entry {
    completed: Arc<Completed>,
    valid_until: Timestamp,
    bytes: usize,
    /// Where the entry sits in `by_use`.
    queued: u64,
    last_use: u64,
}

impl Entries {
    fn push(&mut self, key: Key, completed: Arc<Completed>, valid_until: Timestamp, bytes: usize) {
        let last_use = self.next_use();
        self.by_use.insert(last_use, key.clone());
        self.bytes += bytes;
        self.by_key.insert(
            key,
            Entry {
                completed,
                valid_until,
                bytes,
                queued: last_use,
                last_use,
            },
        );
    }

    fn remove(&mut self, key: &Key) {
        if let Some(entry) = self.by_key.remove(key) {
            self.by_use.remove(&entry.queued);
            self.bytes -= entry.bytes;
        }
    }

    fn remove_least_recent(&mut self) {
        // Each entry used since it was queued moves to its last use once, so this ends.
        while let Some((queued, key)) = self.by_use.pop_first() {
            let Some(entry) = self.by_key.get_mut(&key) else {
                continue;
            };
            if entry.last_use > queued {
                entry.queued = entry.last_use;
                self.by_use.insert(entry.last_use, key);
                continue;
            }
            self.bytes -= entry.bytes;
            self.by_key.remove(&key);
            return;
        }
    }

    fn next_use(&mut self) -> u64 {
        self.next_use += 1;
        self.next_use
    }
}
