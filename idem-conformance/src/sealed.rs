//! Any target seen through sealing (feature `seal`): the suite checks a store through idem-core's
//! sealing and key digests as it checks the store bare, so the sealed store's forwarding keeps
//! every semantic too.

use std::sync::Arc;

use async_trait::async_trait;
use idem_core::seal::Keyring;
use idem_core::{store::Store, Idempotency, Key};

use crate::Target;

/// `inner`'s store with sealing and key digests on: the store a handle built with
/// [`Idempotency::with_sealing`] and [`Idempotency::with_key_digest`] writes through.
///
/// ```ignore
/// async fn sealed() -> Option<Sealed<MyTarget>> {
///     let keyring = Keyring::new("2026-11", [7; 32]).with_old("2026-05", [5; 32]);
///     Some(Sealed::new(MyTarget::connect().await.ok()?, keyring, [42; 32]))
/// }
/// idem_conformance::conformance_tests!(target, sealed => sealed);
/// ```
pub struct Sealed<T> {
    inner: T,
    view: Idempotency,
}

impl<T: Target> Sealed<T> {
    /// Seals `inner`'s store with `keyring`, and digests its keys with `key_digest_secret`.
    pub fn new(inner: T, keyring: Keyring, key_digest_secret: impl AsRef<[u8]>) -> Self {
        let view = Idempotency::from_arc(inner.store())
            .with_sealing(keyring)
            .with_key_digest(key_digest_secret);
        Sealed { inner, view }
    }

    /// The target under the sealing.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

#[async_trait]
impl<T: Target> Target for Sealed<T> {
    fn store(&self) -> Arc<dyn Store> {
        self.view.store().clone()
    }

    /// Writes the undecodable value where the sealed store keeps `key`: under its digest.
    async fn corrupt(&self, key: &Key) -> bool {
        self.inner.corrupt(&self.view.stored_key(key)).await
    }
}
