//! Redis for the tests: a server started on a free loopback port (or `IDEM_REDIS_URL`), a
//! cluster of them, and the conformance [`Target`](idem_conformance::Target) on either.

pub mod server;

#[cfg(feature = "redis")]
pub mod cluster;
#[cfg(feature = "redis")]
pub mod target;
