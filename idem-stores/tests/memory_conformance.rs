//! The conformance suite on the memory store; and again, as `sealed::NAME`, with sealing and
//! key digests on, which checks the sealed store's forwarding without a server.

use std::sync::Arc;

use idem_conformance::{Sealed, Target};
use idem_core::seal::Keyring;
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

/// No sweeping: expired records must be judged expired on read, not merely swept away.
fn unswept() -> MemoryStore {
    MemoryStore::builder().no_sweeping().build()
}

async fn memory() -> Option<Memory> {
    Some(Memory(unswept()))
}

/// The memory store seen through sealing: keys digested, outcomes and steps sealed, under a
/// keyring with an old key beside the current one.
async fn sealed() -> Option<Sealed<Memory>> {
    let keyring = Keyring::new("test-2026-11", [7; 32]).with_old("test-2026-05", [5; 32]);
    Some(Sealed::new(Memory(unswept()), keyring, [42; 32]))
}

idem_conformance::conformance_tests!(memory, sealed => sealed);
