//! Test support shared by the integration tests.

pub mod process;
pub mod redis_server;
#[cfg(feature = "redis")]
pub mod redis_target;
pub mod moto_server;

#[cfg(feature = "dynamodb")]
pub mod dynamodb;
