//! Sealed records (feature `seal`): outcomes and step values encrypted at rest, and keys that
//! reach the store only as a digest.
//!
//! ```
//! use idem_core::seal::Keyring;
//! use idem_core::Idempotency;
//! # fn demo(store: impl idem_core::store::Store, current_key: [u8; 32], previous_key: [u8; 32], secret: [u8; 32]) {
//! let keys = Keyring::new("2026-11", current_key) // seals everything new
//!     .with_old("2026-05", previous_key); // still opens what it sealed
//! let idem = Idempotency::new(store)
//!     .with_sealing(keys) // outcomes and step values: AES-256-GCM
//!     .with_key_digest(secret); // stored keys: HMAC-SHA256(secret, key)
//! # }
//! ```
//!
//! A ring is also written as text, read from an environment variable or a file
//! ([`Keyring::from_env`], [`Keyring::from_file`]): `ID=BASE64KEY` entries, the current key
//! first ([`Keyring::from_text`]). The `idem` command reads sealed outcomes with the same ring,
//! from `IDEM_KEYRING` or `--keyring-file`, and opens them as a handle does
//! ([`Keyring::open_outcome`]).
//!
//! - **Sealing.** Every stored outcome and step value is sealed with AES-256-GCM (RustCrypto's
//!   `aes-gcm`) under a key derived from the ring's current key, with that key's id stored
//!   beside it. The associated data is the record's whole stored identity (the store's
//!   [`sealing_scope`](crate::store::Store::sealing_scope): its key prefix or table, then the
//!   stored key) and what the value is: an outcome of its kind (`ok` or `err`) for the call's
//!   fingerprint, or a step of its name. An outcome copied to another prefix, table or key or
//!   to a call with other arguments, a step value copied to another key or step, or an `ok`
//!   turned into `err`, does not open.
//! - **Format.** A sealed value starts with its format's version: 2 since the scope is bound.
//!   A value of version 1 (bound to the stored key alone) is refused as a corrupt record whose
//!   reason says so ([`Unopened::OtherFormat`]): let such records expire, or delete them.
//! - **Nonces.** Each nonce is synthetic: an HMAC of the value and its context under a second
//!   derived key, as SIV modes make them. Sealing one value again for one record gives the
//!   same bytes, so that a store still recognises a repeated completion (PostgreSQL's
//!   `complete_in_transaction` relies on it). That shows when a stored key holds the same
//!   value twice (a retry, or the key used again after it expired). Two different values get
//!   different nonces unless 96 bits of HMAC collide: rotate a key well before it has sealed
//!   2^32 values.
//! - **Unsealed values are refused** as corrupt records, so that no one with write access to
//!   the store can slip one in. While records written before sealing still live, read them
//!   with [`Keyring::accept_unsealed`], and remove it once they have expired.
//! - **Rotation.** Deploy the new key to every process in [`Keyring::with_old`] first; then
//!   make it the current one (and the old one `with_old`): a process that does not know a key
//!   yet refuses what it sealed. Drop the old key once the longest TTL any call uses (and any
//!   steps' keeping) has passed since: nothing seals old values again. A value sealed with a
//!   key the ring lacks, or changed, is a corrupt record
//!   ([`Error::CorruptRecord`](crate::Error::CorruptRecord), naming the key's id): refused,
//!   never run again, never a panic.
//! - **Key digests.** With [`Idempotency::with_key_digest`](crate::Idempotency::with_key_digest)
//!   the stored key is the namespace and an HMAC-SHA256 of the whole key (namespace, name,
//!   scope, parts) under the secret, and the stored fingerprint is keyed by the secret too,
//!   so that a guess of the arguments cannot be tested against it. Turning digests on or off,
//!   or changing the secret, changes every stored key and fingerprint: records stored before
//!   are not found, and while processes of both kinds serve, one call can run on each. Switch
//!   when no call with a live key can arrive: a deploy with no traffic for the TTL.
//! - **Stores' own APIs.** [`CallContext::stored_key`](crate::CallContext::stored_key) and
//!   [`CallContext::stored_outcome`](crate::CallContext::stored_outcome) give a store what
//!   the handle writes, as `complete_in_transaction` uses them. They follow the handle the
//!   call runs under: set sealing on each handle, rather than building a handle on another's
//!   [`store`](crate::Idempotency::store).
//! - **What a writer of the store can still do**: put back an earlier value of the same stored
//!   key, since a value is bound to its key, its step name or its outcome's kind and
//!   arguments, not to one record's lifetime: a step value from an earlier record of the key
//!   (one that expired or was forgotten), or an earlier outcome of the same key and arguments.
//!   And mark a completed record aborted, which replays no value. Keep write access to the
//!   store as narrow as read access.
//! - **What stays visible**: sizes and timing of records, states and times, step names, the
//!   namespace; without a digest secret, the fingerprint (a SHA-256 of the arguments) and the
//!   key; errors, logs and traces name the clear key unless
//!   [`Idempotency::name_keys_by_digest`](crate::Idempotency::name_keys_by_digest) names it by its
//!   digest (the body's [`CallContext::key`](crate::CallContext::key) too). Someone with the process's memory or
//!   the keys reads everything. The [`ReplayCache`](crate::ReplayCache) keeps opened values,
//!   in memory only. A quota counts values before they are sealed (a sealed value is 30 to 100
//!   bytes longer).

mod keyring;
mod store;
mod text;

pub use keyring::{is_sealed, sealed_key_id, Keyring, Unopened, SEAL_KEY_BYTES};
pub use store::MIN_KEY_DIGEST_SECRET_BYTES;
pub(crate) use store::{KeyDigest, Sealing};
pub use text::KeyringError;
