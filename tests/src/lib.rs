//! Test support shared by the integration tests.

pub mod process;
pub mod redis_server;
#[cfg(feature = "redis")]
pub mod redis_target;
