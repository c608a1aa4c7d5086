//! For store authors: the [`Store`] contract and the records a store keeps.
//!
//! An application hands a store to [`Idempotency::new`](crate::Idempotency::new) and needs
//! nothing from this module. A backend of your own implements [`Store`] over these types; the
//! `idem-conformance` crate then checks it against every semantic of the contract:
//!
//! ```toml
//! [dev-dependencies]
//! idem-conformance = "0.1"
//! ```

mod contract;
mod fencing;
mod inventory;
mod judge;
mod lookup;
mod outcome;
mod record;
mod size;
mod steps;
pub(crate) mod time;
mod unchanged;

/// Shared, reference-counted bytes (the `bytes` crate's): what a stored outcome
/// ([`Outcome`]) and a step's value ([`Steps`]) hold, so that a replay borrows the buffer a
/// store keeps or read rather than copying it. Re-exported for stores, which then need no
/// dependency of their own on the crate.
pub use bytes::Bytes;
pub use contract::Store;
pub use fencing::propose as propose_fencing_token;
pub use inventory::{Inventory, ListPage, ListQuery, PurgeProgress, UnkeyedEntry};
pub use judge::{judge_reserve, ReserveJudgement};
pub use lookup::{Lookup, Probe};
pub use outcome::Outcome;
pub use record::{
    Claim, Completed, InProgress, OwnerToken, Record, Reservation, LEASE_GRACE, LEASE_GRACE_MS,
};
pub use size::{
    check_found, check_outcome_len, check_record_len, judge_found, judge_oversized, max_record_len,
    RECORD_HEAD_ROOM,
};
pub use steps::Steps;
pub use time::Timestamp;
pub use unchanged::is_same_record;

/// What a sealed value starts with (see `seal`), before the format's version: no JSON value
/// starts with a zero byte, and an outcome codec's value that starts with these bytes is
/// refused as it is encoded (idem-http's frame starts `\0iH`).
pub(crate) const SEALED_MAGIC: [u8; 3] = [0, b'i', b'S'];

/// What a value sealed today starts with: [`SEALED_MAGIC`] and the format's version, 2 (bound
/// to the store's [`sealing_scope`](Store::sealing_scope) too). Version 1 values, bound to the
/// stored key alone, are still recognised as sealed, and refused.
#[cfg(feature = "seal")]
pub(crate) const SEALED_PREFIX: [u8; 4] = [0, b'i', b'S', 2];

/// Whether `value` is a sealed value (of any format version), which only a handle with a
/// keyring opens.
pub(crate) fn is_sealed(value: &[u8]) -> bool {
    value.len() > SEALED_MAGIC.len() && value.starts_with(&SEALED_MAGIC)
}
