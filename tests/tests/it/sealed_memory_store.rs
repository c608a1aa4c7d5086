//! The memory store seen through sealing is still the memory store to metrics and operators.

use idem_core::Idempotency;
use idem_stores::memory::MemoryStore;
use idem_tests::sealed::{keyring, KEY_DIGEST_SECRET};

#[tokio::test]
async fn a_sealed_store_is_named_and_listed_as_the_store_under_it() {
    let idem = Idempotency::new(MemoryStore::builder().build())
        .with_sealing(keyring())
        .with_key_digest(KEY_DIGEST_SECRET);
    let store = idem.store();
    assert_eq!(store.name(), "memory");
    assert!(store.inventory().is_some(), "the memory store's listing");
}
