//! The in-process store: records in a sharded map, waiters woken on completion.
//!
//! Right for a single process, for tests and for development. Records do not survive a restart
//! and are not shared between processes: run more than one instance behind a load balancer and
//! you need a shared store (Redis, DynamoDB).
//!
//! ```
//! use idem_core::Idempotency;
//! use idem_stores::memory::MemoryStore;
//! let idem = Idempotency::new(MemoryStore::builder().max_records(1_000_000).build());
//! idem_core::install(idem);
//! ```

mod builder;
mod capacity;
mod inventory;
mod shard;
mod store;

pub use builder::MemoryStoreBuilder;
pub use store::MemoryStore;

/// Why a [`MemoryStore`] refused a reservation: it holds
/// [`max_records`](MemoryStoreBuilder::max_records) records and none has expired. The caller
/// gets `idem_core::Error::Store` (HTTP 503) and the function does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFull {
    /// The bound it reached.
    pub max: usize,
}

impl std::fmt::Display for StoreFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the memory store holds its maximum of {} live records; none can be evicted",
            self.max
        )
    }
}

impl std::error::Error for StoreFull {}
