//! Idempotent AWS Lambda functions and SQS batches on [idem](idem_core): what AWS Lambda
//! Powertools' idempotency utility does for Python, TypeScript, Java and .NET, for Rust.
//!
//! - [`IdempotentHandler`] wraps any `lambda_runtime` handler: the key is selected from the
//!   event with a JMESPath expression, as Powertools writes it (`powertools_json(body).order_id`),
//!   and a retry of the event gets the first invocation's response.
//! - [`sqs::BatchProcessor`] runs each message of an SQS batch once per key and reports the
//!   failed ones as `batchItemFailures`, so that SQS redelivers only them.
//!
//! The key of an HTTP event (API Gateway, a function URL, an ALB) is scoped by the principal
//! its authorizer named ([`principal`]), and a keyed HTTP event without one is refused unless
//! the handler [shares one key space](IdempotentHandlerBuilder::unscoped); the keys of SQS
//! messages and direct invokes are unscoped, since their producer is trusted.
//!
//! Every guarantee of idem holds: the key is reserved before the handler runs, a duplicate
//! arriving mid-flight is told the invocation is in progress, the same key with another
//! payload is refused, a failed handler releases its key, and the record lives in the store
//! the [`Idempotency`](idem_core::Idempotency) handle was given (DynamoDB as Powertools, or
//! Redis, PostgreSQL, memory). The reservation lasts until the invocation's deadline, so that
//! after a timeout the next delivery takes the key over.
//!
//! ```
//! use idem_core::Idempotency;
//! use idem_stores::memory::MemoryStore;
//! use lambda_runtime::{service_fn, Context, LambdaEvent, Service};
//! use serde_json::{json, Value};
//!
//! async fn create_order(event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
//!     Ok(json!({"statusCode": 201, "body": event.context.request_id}))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let mut handler = idem_lambda::IdempotentHandler::builder(Idempotency::new(MemoryStore::new()))
//!     .name("orders")
//!     .event_key("powertools_json(body).order_id")
//!     .build(service_fn(create_order));
//!
//! let delivery = |request_id: &str| {
//!     let mut context = Context::default();
//!     context.request_id = request_id.to_owned();
//!     LambdaEvent::new(json!({"body": "{\"order_id\": \"o-42\"}"}), context)
//! };
//! let first = handler.call(delivery("req-1")).await.unwrap();
//! let retry = handler.call(delivery("req-2")).await.unwrap();
//! assert_eq!(retry, first, "the retry gets the first response: created by req-1");
//! # }
//! ```
//!
//! # Numbers
//!
//! Keys and [`payload_validation`](IdempotentHandlerBuilder::payload_validation) data compare
//! as JSON values, numbers by the one rule of [`idem_core::json`] that the attribute and
//! idem-http share: `"42"` (a string) and `42` are two keys, `42` and `42.0` one; `100` and
//! `100.0` are one amount, `101` another. The numbers compared are those of the event as it
//! was parsed: `serde_json` reads a number with a fraction or an exponent (in the event, or in
//! a body that `powertools_json` reads) as the nearest double, so two spellings that round to
//! one double (`1.00000000000000001` and `1`) are one value here, where idem-http, reading a
//! body's text, tells them apart. An integer beyond 64 bits would be rounded the same way: in
//! a key or in validated data it is refused (`IdempotencyKeyError`), so send it as a string.
//!
//! See the README's "Lambda" section for what each error looks like to API Gateway, SQS and
//! direct invokers, and which Powertools options exist here.

mod build;
mod error;
mod expression;
mod handler;
mod headers;
mod hook;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
mod invocation;
mod powertools;
pub mod principal;
mod scoping;
mod selection;
pub mod sqs;
mod tracked;

pub use error::Error;
pub use expression::{EventPath, ExpressionError};
pub use handler::{IdempotentHandler, IdempotentHandlerBuilder};
pub use hook::Replay;
pub use powertools::{MAX_DECODED_BYTES, MAX_GZIP_INFLATED_BYTES};
pub use scoping::Unscoped;

/// The `tracing` target of this crate's events: `idem::lambda`, under `idem` with every other
/// crate's.
pub const TARGET: &str = idem_protocol::log::LAMBDA;

/// The README's snippet, compiled as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
