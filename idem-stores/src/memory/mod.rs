//! The in-process store: records in a sharded map, waiters woken on completion.
//!
//! Right for a single process, for tests and for development. Records do not survive a restart
//! and are not shared between processes: run more than one instance behind a load balancer and
//! you need a shared store (Redis, DynamoDB).
//!
//! ```
//! use idem_core::Idempotency;
//! use idem_stores::memory::MemoryStore;
//! let idem = Idempotency::new(MemoryStore::new());
//! idem_core::install(idem);
//! ```

mod shard;
mod store;

pub use store::MemoryStore;
