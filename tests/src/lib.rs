//! Test support shared by the integration tests.

pub mod crash;
pub mod crowd;
pub mod harness;
pub mod interrupt;
pub mod moto_server;
pub mod postgres_server;
pub mod process;
pub mod redis_server;

#[cfg(feature = "dynamodb")]
pub mod dynamodb;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis_cluster;
#[cfg(feature = "redis")]
pub mod redis_target;
