//! PostgreSQL test support: a store on a database of its own, and the conformance
//! [`Target`](idem_conformance::Target).

pub mod server;

#[cfg(feature = "postgres")]
mod target;

#[cfg(feature = "postgres")]
pub use target::{unique_database_name, TestPg};
