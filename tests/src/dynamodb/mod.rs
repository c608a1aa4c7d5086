//! DynamoDB test support: SDK clients for a test endpoint, interceptors that count requests and
//! inject faulty responses, and the conformance [`Target`](idem_conformance::Target).

mod client;
mod faults;
mod requests;
mod target;

pub use client::{client, ClientOptions};
pub use faults::{Fault, FaultInjector};
pub use requests::{Request, RequestLog};
pub use target::{unique_table_name, TestDynamo};
