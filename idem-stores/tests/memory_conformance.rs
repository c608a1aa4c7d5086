//! The conformance suite on the memory store; and again, as `sealed::NAME`, with sealing and
//! key digests on, which checks the sealed store's forwarding without a server.

use std::sync::Arc;

use idem_conformance::Target;
use idem_core::seal::Keyring;
use idem_core::{store::Store, Idempotency, Key};
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

/// The memory store seen through sealing: keys digested, outcomes and steps sealed, under a
/// keyring with an old key beside the current one.
struct Sealed(Idempotency);

#[async_trait::async_trait]
impl Target for Sealed {
    fn store(&self) -> Arc<dyn Store> {
        self.0.store().clone()
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

async fn sealed() -> Option<Sealed> {
    let keyring = Keyring::new("test-2026-11", [7; 32]).with_old("test-2026-05", [5; 32]);
    let view = Idempotency::new(unswept())
        .with_sealing(keyring)
        .with_key_digest([42; 32]);
    Some(Sealed(view))
}

idem_conformance::conformance_tests!(memory, sealed => sealed);
