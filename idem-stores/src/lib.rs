//! Stores for idem.

#[cfg(feature = "memory")]
pub mod memory;
