//! Test support shared by the integration tests.

pub mod crash;
pub mod crowd;
pub mod harness;
pub mod interrupt;
pub mod inventory;
pub mod peak;
pub mod process;

pub mod dynamodb;
pub mod postgres;
pub mod redis;
pub mod sealed;
