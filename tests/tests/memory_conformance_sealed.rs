//! The store conformance suite, unchanged, against the memory store with sealing and key
//! digests on: the sealed store's forwarding checked without a server.

use std::sync::Arc;

use idem_conformance::Target;
use idem_core::{store::Store, Key};
use idem_stores::memory::MemoryStore;
use idem_tests::sealed::Sealed;

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

async fn target() -> Option<Sealed<Memory>> {
    // No sweeping: expired records must be judged expired on read, not merely swept away.
    let store = MemoryStore::builder().no_sweeping().build();
    Some(Sealed::new(Memory(store)))
}

idem_conformance::conformance_tests!(target);
