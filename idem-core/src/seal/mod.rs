//! Sealed records (feature `seal`): outcomes and step values encrypted at rest, and keys that
//! reach the store only as a digest.
//!
//! ```
//! use idem_core::seal::Keyring;
//! use idem_core::Idempotency;
//! # fn demo(store: impl idem_core::Store, current_key: [u8; 32], previous_key: [u8; 32], secret: [u8; 32]) {
//! let keys = Keyring::new("2026-11", current_key) // seals everything new
//!     .with_old("2026-05", previous_key); // still opens what it sealed
//! let idem = Idempotency::new(store)
//!     .with_sealing(keys) // outcomes and step values: AES-256-GCM
//!     .with_key_digest(secret); // stored keys: HMAC-SHA256(secret, key)
//! # }
//! ```
//!
//! - **Sealing.** Every stored outcome and step value is sealed with AES-256-GCM (RustCrypto's
//!   `aes-gcm`) under the ring's current key, the key's id stored beside it, and the record's
//!   stored key (and the step's name) as associated data: a sealed value copied to another
//!   key, or to another step, does not open. Each nonce is synthetic, an HMAC of the value
//!   and its context under a key derived from the sealing key (as SIV modes make them): no two
//!   different values share one, and a value sealed again for the same record gives the same
//!   bytes, so that a store still recognises a repeated completion (PostgreSQL's
//!   `complete_in_transaction` relies on it). What that shows is only that one record was
//!   written twice with one value. Fingerprints are digests already, and stay as they are.
//! - **Stores' own APIs.** [`CallContext::stored_key`](crate::CallContext::stored_key) and
//!   [`CallContext::stored_outcome`](crate::CallContext::stored_outcome) give a store what
//!   the handle would write, as `complete_in_transaction` uses them.
//! - **Rotation.** Put the new key first and the old one in [`Keyring::with_old`]: new values
//!   are sealed with the new key, and records sealed with the old one are still replayed.
//!   Drop the old key once a TTL has passed. A value sealed with a key the ring lacks, or
//!   changed, is a corrupt record ([`Error::CorruptRecord`](crate::Error::CorruptRecord),
//!   naming the key's id): refused, never run again, never a panic.
//! - **Key digests.** With [`Idempotency::with_key_digest`](crate::Idempotency::with_key_digest)
//!   the stored key is the namespace and an HMAC-SHA256 of the whole key (namespace, name,
//!   scope, parts) under the secret. Errors and logs still name the clear key. Turning digests
//!   on (or changing the secret) changes every stored key: records stored before are not
//!   found, so switch on a new namespace, or when a TTL without traffic has passed.
//! - **Migrating.** Values stored before sealing was on are read as they are, until
//!   [`Keyring::refuse_unsealed`] refuses them once they have all expired.
//! - **What stays visible**: sizes and timing of records, the fingerprint, the state and
//!   times of a record, the namespace. Someone with the process's memory or the keys reads
//!   everything. The [`ReplayCache`](crate::ReplayCache) keeps opened values, in memory only.

mod keyring;
mod store;

pub use keyring::{Keyring, SEAL_KEY_BYTES};
pub use store::MIN_KEY_DIGEST_SECRET_BYTES;
pub(crate) use store::{KeyDigest, Sealing};
