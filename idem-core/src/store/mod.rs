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
//!
//! The items here are also re-exported, hidden, at the crate root.

mod contract;
mod record;
pub(crate) mod time;

pub use crate::lease::fencing::propose as propose_fencing_token;
pub use crate::steps::Steps;
pub use crate::StoreError;
pub use contract::Store;
pub use record::{
    Claim, Completed, InProgress, Outcome, OwnerToken, Record, Reservation, LEASE_GRACE,
    LEASE_GRACE_MS,
};
pub use time::Timestamp;
