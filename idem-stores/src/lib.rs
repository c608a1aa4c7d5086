//! Stores for idem.

#[cfg(feature = "memory")]
pub mod memory;

#[cfg(feature = "dynamodb")]
pub mod dynamodb;

#[cfg(feature = "redis")]
pub mod redis;
