//! The servers idem's tests talk to, started as the tests need them: `redis-server`,
//! `moto_server`, a PostgreSQL cluster and a Redis Cluster, each on a free loopback port (or an
//! existing server named by an environment variable), with stores on them as conformance
//! targets, and the clients and fault wrappers that reach them. Not published: a workspace
//! crate for the backend suite (`idem-tests`), the certification (`idem-certify`), the tests of
//! `idem-cli`, `idem-client` and `idem-lambda`, and the HTTP comparison bench.
//!
//! - [`process`]: one server program on a loopback port, killed when dropped, which fault
//!   tests may kill and restart; [`TestServer`](process::TestServer), a started or an external
//!   server.
//! - [`redis`], [`dynamodb`], [`postgres`]: each backend's server, and with the feature of the
//!   same name its stores, clients and faults.
//! - [`lambda`]: cargo-lambda's emulator of the Lambda Runtime API, for function processes.
//! - [`shared`]: servers the tests of one binary share, started once.
//! - [`unique`]: names no other test uses, for tables and databases on a shared server.
//! - [`command`]: the `idem` command run as a process, in an environment cleaned of the
//!   machine's store and AWS settings.
//! - [`proxy`]: a TCP proxy in front of an HTTP server that loses answers on purpose.
//! - [`availability`]: a server that cannot be had makes the test ignored, with the reason, or
//!   fails it when `IDEM_REQUIRE_BACKENDS=1`.

pub mod availability;
pub mod command;
pub mod process;
pub mod shared;
pub mod unique;

pub mod dynamodb;
pub mod lambda;
pub mod postgres;
pub mod proxy;
pub mod redis;
