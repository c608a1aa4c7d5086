//! The sealing the suite's sealed targets use: one keyring (a current key and an old one) and one
//! key-digest secret, and any conformance target seen through them.
#![cfg(feature = "seal")]

use idem_conformance::{Sealed, Target};
use idem_core::seal::Keyring;

/// The secret the sealed targets digest keys with.
pub const KEY_DIGEST_SECRET: [u8; 32] = [42; 32];

/// The keyring the sealed targets seal with.
pub fn keyring() -> Keyring {
    Keyring::new("test-2026-11", [7; 32]).with_old("test-2026-05", [5; 32])
}

/// `inner`'s store with this keyring's sealing and key digests on.
pub fn sealed<T: Target>(inner: T) -> Sealed<T> {
    Sealed::new(inner, keyring(), KEY_DIGEST_SECRET)
}
