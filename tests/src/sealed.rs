//! Any conformance target seen through sealing: keys digested, outcomes and steps sealed.
#![cfg(feature = "seal")]

use std::sync::Arc;

use idem_conformance::Target;
use idem_core::seal::Keyring;
use idem_core::{store::Store, Idempotency, Key};

/// The secret the sealed targets digest keys with.
pub const KEY_DIGEST_SECRET: [u8; 32] = [42; 32];

/// The keyring the sealed targets seal with.
pub fn keyring() -> Keyring {
    Keyring::new("test-2026-11", [7; 32]).with_old("test-2026-05", [5; 32])
}

/// `inner`'s store with sealing and key digests on.
pub struct Sealed<T> {
    inner: T,
    view: Idempotency,
}

impl<T: Target> Sealed<T> {
    /// Seals `inner`'s store.
    pub fn new(inner: T) -> Self {
        let view = Idempotency::from_arc(inner.store())
            .with_sealing(keyring())
            .with_key_digest(KEY_DIGEST_SECRET);
        Sealed { inner, view }
    }

    /// The target under the sealing.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

#[async_trait::async_trait]
impl<T: Target> Target for Sealed<T> {
    fn store(&self) -> Arc<dyn Store> {
        self.view.store().clone()
    }

    /// Writes the undecodable value where the sealed store keeps `key`.
    async fn corrupt(&self, key: &Key) -> bool {
        self.inner.corrupt(&self.view.stored_key(key)).await
    }
}
