//! `lambda_http` functions behind idem-http's [`IdempotencyLayer`](idem_http::IdempotencyLayer)
//! (feature `http`): a function that serves API Gateway (REST or HTTP API), a Lambda function
//! URL or an ALB with `lambda_http::run` gets the `Idempotency-Key` contract an axum app gets,
//! decided by the same code, its keys scoped by the principal the authorizer named.
//!
//! ```no_run
//! use idem_core::Idempotency;
//! use idem_stores::memory::MemoryStore;
//! use lambda_http::tower::ServiceBuilder;
//! use lambda_http::{service_fn, Body, Error, Request, Response};
//!
//! async fn create_order(request: Request) -> Result<Response<Body>, Error> {
//!     // Runs once per key and principal; a retry gets this response back.
//!     let charge = idem_core::step("charge", async { Ok::<_, Error>("ch_1".to_owned()) }).await?;
//!     Ok(Response::builder().status(201).body(format!("charged: {charge}").into())?)
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Error> {
//!     let idem = Idempotency::new(MemoryStore::new()); // DynamoDB or Redis in production
//!     lambda_http::run(
//!         ServiceBuilder::new()
//!             .layer(idem_lambda::http::layer(idem))
//!             .service(service_fn(create_order)),
//!     )
//!     .await
//! }
//! ```
//!
//! # Whose keys these are
//!
//! `lambda_http` puts the event's request context in each request's extensions; the layer
//! reads the principal from it by [the crate's one rule](crate::principal#the-rule), the one
//! [`IdempotentHandler`](crate::IdempotentHandler) reads from a raw event:
//!
//! | the function is behind | principal |
//! |---|---|
//! | a REST API with a Lambda authorizer | its `principalId` |
//! | a REST API with a Cognito user pool authorizer, an HTTP API with a JWT authorizer | the token's `sub` |
//! | an HTTP API with a Lambda authorizer | the `principalId` of its `context` |
//! | IAM authorization (`AWS_IAM`), a function URL with IAM auth | the Cognito identity, else the caller's ARN |
//! | a route without an authorizer, a function URL with `NONE` auth, an ALB | none |
//!
//! Two principals never share a record: each one's key runs once for it. A keyed request
//! without a principal is refused with a 400 ([`problem::UNSCOPED`](idem_http::problem::UNSCOPED))
//! and nothing runs, unless the layer, made with [`builder`], is told otherwise with
//! [`unscoped`](idem_http::IdempotencyLayerBuilder::unscoped): passed through, or one key
//! space shared by every such request (for a function whose callers are all one party).
//! Quotas ([`quota`](idem_http::IdempotencyLayerBuilder::quota)) count per principal.
//!
//! # What the handler gets
//!
//! - The `lambda_http::Request` it was written for: method, path, query, headers, the body
//!   as the event carried it (`Body::Text`, `Body::Binary` or `Body::Empty`), and the
//!   request context and Lambda context in its extensions (`lambda_http::RequestExt`).
//! - It runs inside the engine's call: [`idem_core::context`] is the call,
//!   [`idem_core::step`] records, and a retry after a 502 resumes after the recorded steps.
//! - Its answer is anything `lambda_http` takes (`IntoResponse`: a `Response`, a `String`, a
//!   `serde_json::Value`); it is stored and replayed by idem-http's rules
//!   ([`stored_by_default`](idem_http::stored_by_default)), with `Idempotent-Replayed: true`
//!   on a replay, and every refusal is a `application/problem+json` answer, as from an axum
//!   app.
//!
//! The reservation is held by idem's lease, renewed while the handler runs, not by the
//! invocation's deadline: a function that timed out leaves its key in progress (409) until
//! the lease passes.

mod body;
mod handler;
mod layer;
mod principal;
mod service;

pub use layer::{builder, layer, LambdaHttpLayer};
pub use service::{LambdaHttpFuture, LambdaHttpService};
