//! The conformance suite on the memory store.

use std::sync::Arc;

use idem_conformance::Target;
use idem_core::{store::Store, Key};
use idem_stores::memory::MemoryStore;

struct Memory(MemoryStore);

#[async_trait::async_trait]
impl Target for Memory {
    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.0.clone())
    }

    /// The memory store keeps typed records: there are no bytes to corrupt.
    async fn corrupt(&self, _: &Key) -> bool {
        false
    }
}

async fn memory() -> Option<Memory> {
    // No sweeping: expired records must be judged expired on read, not merely swept away.
    Some(Memory(MemoryStore::builder().no_sweeping().build()))
}

idem_conformance::conformance_tests!(memory);
