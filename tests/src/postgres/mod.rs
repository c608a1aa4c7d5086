//! PostgreSQL test support: a store on a database of its own, and the conformance
//! [`Target`](idem_conformance::Target).

mod target;

pub use target::{unique_database_name, TestPg};
