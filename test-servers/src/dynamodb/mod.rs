//! DynamoDB test support: SDK clients for a test endpoint, interceptors that count requests and
//! inject faulty responses, and the conformance [`Target`](idem_conformance::Target).

pub mod server;

#[cfg(feature = "dynamodb")]
mod client;
#[cfg(feature = "dynamodb")]
mod faults;
#[cfg(feature = "dynamodb")]
mod requests;
#[cfg(feature = "dynamodb")]
mod target;

#[cfg(feature = "dynamodb")]
pub use client::{client, ClientOptions};
#[cfg(feature = "dynamodb")]
pub use faults::{Fault, FaultInjector};
#[cfg(feature = "dynamodb")]
pub use requests::{Request, RequestLog};
#[cfg(feature = "dynamodb")]
pub use target::{unique_table_name, TestDynamo};
